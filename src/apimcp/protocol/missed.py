"""A session's GET stream, when it opens, is first told what the session missed while it had none.

The session era of one endpoint notes every change of its lists in the endpoint's change marks, parks the
notifications meant for a session with no GET stream open anywhere, and, when a GET stream opens (new, or
resumed with `Last-Event-ID`), sends one notification per thing that changed since the session's previous
stream ended (or since the session began), then what was parked. What is kept lives in the event store's
`Backlog` (`backlog.py`), shared by replicas; a store that fails is logged and costs the client only what it
would have missed anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import orjson

from apimcp.protocol.backlog import DEFAULT_MAX_PARKED, Backlog
from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.listeners import ChangeKind, change_message
from apimcp.protocol.sessions import Session

log = logging.getLogger("apimcp.protocol")

CLOCK_MARGIN_SECONDS = 1.0
"""How far replicas' clocks may differ: a change this close before a stream ended is told again (twice at
worst, never lost)."""
_LISTS: tuple[ChangeKind, ...] = ("tools", "prompts", "resources")


def _mark_of(kind: ChangeKind, uri: str | None) -> str:
    return f"resource:{uri}" if kind == "resource" else kind


class MissedNotifications:
    """The backlog of one endpoint's sessions, kept `keep_seconds` after its last use (the session's idle time)."""

    def __init__(self, backlog: Backlog, endpoint: str, keep_seconds: float) -> None:
        self._backlog = backlog
        self._endpoint = endpoint
        self._keep = keep_seconds
        self._pending: set[asyncio.Task[None]] = set()

    def changed(self, kind: ChangeKind, uri: str | None) -> None:
        """A change hub's watcher: mark the change for the sessions that have no stream to hear it."""
        self._spawn(self._backlog.mark(self._endpoint, _mark_of(kind, uri)), "note a change")

    async def opened(self, session: Session, holder: str, lease_seconds: float) -> list[JsonObject]:
        """A GET stream of the session opens: the notifications it missed, in order, each once."""
        try:
            claimed = await self._backlog.claim(session.id, holder, lease_seconds, self._keep)
            since = (claimed.heard if claimed.heard is not None else session.created_at) - CLOCK_MARGIN_SECONDS
            marks = await self._backlog.marks_since(self._endpoint, since)
        except Exception as exc:
            log.warning("a GET stream could not learn what its session missed (%s)", type(exc).__name__)
            return []
        missed = [change_message(kind, None) for kind in _LISTS if marks.overflowed or kind in marks.changed]
        missed += [
            change_message("resource", uri)
            for uri in sorted(session.subscriptions)
            if marks.overflowed or _mark_of("resource", uri) in marks.changed
        ]
        seen = {orjson.dumps(message) for message in missed}
        for data in claimed.parked:
            if data not in seen:
                seen.add(data)
                missed.append(orjson.loads(data))
        return missed

    async def renew(self, session_id: str, holder: str, lease_seconds: float) -> None:
        try:
            await self._backlog.renew(session_id, holder, lease_seconds, self._keep)
        except Exception as exc:
            log.warning("a GET stream could not renew its lease (%s)", type(exc).__name__)

    async def closed(self, session_id: str, holder: str) -> None:
        """The stream ended: from now on its session's notifications are parked."""
        try:
            await self._backlog.release(session_id, holder, self._keep)
        except Exception as exc:
            log.warning("a GET stream's end could not be noted (%s)", type(exc).__name__)

    def park(self, session_id: str, messages: list[JsonObject], elsewhere: Callable[[], None] | None = None) -> None:
        """Keep notifications for a session that has no GET stream here; when one is open on another replica,
        `elsewhere` is called instead (to relay them there)."""
        if messages:
            self._spawn(self._park(session_id, messages, elsewhere), "park a notification")

    async def _park(self, session_id: str, messages: list[JsonObject], elsewhere: Callable[[], None] | None) -> None:
        for message in messages:
            if not await self._backlog.park(session_id, orjson.dumps(message), self._keep, DEFAULT_MAX_PARKED):
                if elsewhere is not None:
                    elsewhere()
                return

    async def forget(self, session_id: str) -> None:
        try:
            await self._backlog.forget(session_id)
        except Exception as exc:
            log.warning("an ended session's backlog could not be dropped (%s)", type(exc).__name__)

    def _spawn(self, work: Coroutine[Any, Any, None], what: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not serving yet (a handler replaced before the server started): nobody to tell
            work.close()
            return

        async def guarded() -> None:
            try:
                await work
            except Exception as exc:
                log.warning("could not %s for sessions without a GET stream (%s)", what, type(exc).__name__)

        task = asyncio.ensure_future(guarded())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settled(self) -> None:
        """Wait for the notes and parkings started so far (tests, and a server about to stop)."""
        while self._pending:
            await asyncio.gather(*self._pending)
