"""Change notifications for clients that keep a stream open.

Session-era clients listen on their GET stream; 2026-07-28 clients on the
response stream of `subscriptions/listen`. Both register a `Listener` with the
endpoint's `ChangeHub`; whoever changes the server's lists (a snapshot swap,
a test tool) calls the hub, which never blocks: each listener has a bounded
queue and a slow client loses duplicate-prone notifications rather than
slowing the server. Watchers hear of every change too (the session era notes
them for sessions whose GET stream is not open: `backlog.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from apimcp.protocol.context import ChangeNotifier
from apimcp.protocol.exchange import Exchange, Receive, wait_for_disconnect
from apimcp.protocol.jsonrpc import JsonObject, notification_message

ChangeKind = Literal["tools", "prompts", "resources", "resource"]
_METHOD: dict[ChangeKind, str] = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
    "resource": "notifications/resources/updated",
}
_QUEUE_LIMIT = 256
ChangeWatcher = Callable[[ChangeKind, str | None], None]


def change_message(kind: ChangeKind, uri: str | None, meta: Mapping[str, Any] | None = None) -> JsonObject:
    """The notification of one change (a resource's with its URI)."""
    params: JsonObject = {}
    if uri is not None:
        params["uri"] = uri
    if meta is not None:
        params["_meta"] = meta
    return notification_message(_METHOD[kind], params or None)


class Listener:
    """One open stream that wants some change notifications."""

    def __init__(self, wants: Callable[[ChangeKind, str | None], bool], meta: Mapping[str, Any] | None = None):
        self._wants = wants
        self._meta = dict(meta) if meta else None
        self._queue: asyncio.Queue[JsonObject | None] = asyncio.Queue(_QUEUE_LIMIT)
        self._gone = False

    def offer(self, kind: ChangeKind, uri: str | None) -> None:
        if not self._wants(kind, uri):
            return
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(change_message(kind, uri, self._meta))

    def send(self, message: JsonObject) -> bool:
        """Queue one message for this stream alone; False when its queue is full."""
        try:
            self._queue.put_nowait(message)
        except asyncio.QueueFull:
            return False
        return True

    def undelivered(self) -> list[JsonObject]:
        """Take what was queued and never written (the stream has ended)."""
        left: list[JsonObject] = []
        while not self._queue.empty():
            message = self._queue.get_nowait()
            if message is not None:
                left.append(message)
        return left

    def close(self) -> None:
        """Ask the stream to end (server shutdown, session deleted, client gone)."""
        try:
            self._queue.put_nowait(None)
        except asyncio.QueueFull:
            # Make room for the end marker: the stream is ending anyway.
            self._queue.get_nowait()
            self._queue.put_nowait(None)

    async def pump(
        self,
        exchange: Exchange,
        receive: Receive,
        tick_seconds: float,
        still_wanted: Callable[[], Awaitable[bool]] | None = None,
    ) -> bool:
        """Write notifications until the stream should end; True when the server ended it.

        Every `tick_seconds`, whether or not notifications flow, `still_wanted` is asked
        whether the stream may go on (a GET stream keeps its session alive this way and
        learns that it has ended); a quiet tick also sends a keepalive comment.
        """
        watcher = asyncio.create_task(wait_for_disconnect(receive))
        watcher.add_done_callback(lambda _: self._client_gone())
        loop = asyncio.get_running_loop()
        next_tick = loop.time() + tick_seconds
        try:
            while True:
                quiet = False
                try:
                    message = await asyncio.wait_for(self._queue.get(), max(0.0, next_tick - loop.time()))
                except TimeoutError:
                    message, quiet = None, True
                if message is not None:
                    await exchange.event(message)
                elif not quiet:
                    return not self._gone
                now = loop.time()
                if now >= next_tick:
                    next_tick = now + tick_seconds
                    if still_wanted is not None and not await still_wanted():
                        return True
                    if quiet:
                        await exchange.keepalive()
        finally:
            watcher.cancel()

    def _client_gone(self) -> None:
        self._gone = True
        self.close()


class ChangeHub(ChangeNotifier):
    """Fans changes out to every listener attached to one endpoint."""

    def __init__(self) -> None:
        self._listeners: set[Listener] = set()
        self._watchers: list[ChangeWatcher] = []

    def watch(self, watcher: ChangeWatcher) -> None:
        """Call `watcher` with every change from now on (it must not block)."""
        self._watchers.append(watcher)

    def attach(self, listener: Listener) -> None:
        self._listeners.add(listener)

    def detach(self, listener: Listener) -> None:
        self._listeners.discard(listener)

    def __len__(self) -> int:
        return len(self._listeners)

    def _broadcast(self, kind: ChangeKind, uri: str | None = None) -> None:
        for listener in list(self._listeners):
            listener.offer(kind, uri)
        for watcher in self._watchers:
            watcher(kind, uri)

    def tools_changed(self) -> None:
        self._broadcast("tools")

    def prompts_changed(self) -> None:
        self._broadcast("prompts")

    def resources_changed(self) -> None:
        self._broadcast("resources")

    def resource_updated(self, uri: str) -> None:
        self._broadcast("resource", uri)

    def close_all(self) -> None:
        for listener in list(self._listeners):
            listener.close()
