"""A gateway's connections to one upstream MCP server: the era it speaks, and its sessions.

The era is learnt once, by the first call (`era.py`). A stateless upstream needs nothing more. A session-era
one gets a session per credential the gateway calls it with (the plan's own, or each user's), opened on first
use, reused by every call with that credential, and opened again when the upstream forgets it (a 404 on the
session: `forget`). One opening at a time per credential; at most `MAX_SESSIONS` sessions are kept, the least
recently used let go first. Each replica holds its own sessions: an upstream session carries nothing a client
needs to find again on another replica, so none is shared through the state store.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import OrderedDict
from collections.abc import Mapping

import aiohttp

from apimcp.backends.http_common import read_limited
from apimcp.backends.rest import new_session
from apimcp.federation import era as eras
from apimcp.federation.listener import MAX_LISTENERS, ProgressRoutes, SessionListener
from apimcp.mcp_client.answers import UpstreamError

MAX_SESSIONS = 256
MAX_OPENING_BYTES = 1024 * 1024
"""An answer to server/discover or initialize larger than this is refused."""


class UpstreamRefused(UpstreamError):
    """The upstream refused to open: `status` is its HTTP status (401: the credential is not accepted)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class UpstreamSessions:
    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        *,
        timeout: aiohttp.ClientTimeout,
        tls: ssl.SSLContext | bool = True,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self._http = http
        self._url = url
        self._timeout = timeout
        self._ssl = tls
        self._max = max_sessions
        self._stateless: eras.Era | None = None
        self._sessions: OrderedDict[str, tuple[eras.Era, Mapping[str, str]]] = OrderedDict()
        """Each credential's session, with the credential's headers (to end the session with)."""
        self._opening: dict[str, asyncio.Future[eras.Era]] = {}
        self.routes = ProgressRoutes()
        """The calls in flight that hear progress from the sessions' GET streams (`listener.py`)."""
        self._listeners: dict[str, SessionListener] = {}
        self._listening: aiohttp.ClientSession | None = None
        """The small pool the GET streams use, apart from the calls' connections."""

    async def era(self, key: str, headers: Mapping[str, str]) -> eras.Era:
        """How to call the upstream with the credential `key` names (its `headers`)."""
        if self._stateless is not None:
            return self._stateless
        known = self._sessions.get(key)
        if known is not None:
            self._sessions.move_to_end(key)
            return known[0]
        pending = self._opening.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[eras.Era] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            opened = await self._open(headers)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: callers waiting on it get it, nobody else must
            raise
        finally:
            del self._opening[key]
        future.set_result(opened)
        if opened.stateless:
            self._stateless = opened
        else:
            self._sessions[key] = (opened, dict(headers))
            self._listen(key, opened, headers)
            while len(self._sessions) > self._max:
                evicted, _ = self._sessions.popitem(last=False)
                self._stop_listening(evicted)
        return opened

    def forget(self, key: str, era: eras.Era) -> None:
        """The upstream no longer knows `era`'s session: the next call opens another."""
        known = self._sessions.get(key)
        if known is not None and known[0] is era:
            del self._sessions[key]
            self._stop_listening(key)

    def _listen(self, key: str, era: eras.Era, headers: Mapping[str, str]) -> None:
        if era.negotiated.session_id is None or len(self._listeners) >= MAX_LISTENERS:
            return
        if self._listening is None:
            self._listening = new_session(limit=MAX_LISTENERS)
        self._listeners[key] = SessionListener(self._listening, self._url, era, headers, self.routes, self._ssl)

    def _stop_listening(self, key: str) -> None:
        listener = self._listeners.pop(key, None)
        if listener is not None:
            listener.stop()

    async def _open(self, headers: Mapping[str, str]) -> eras.Era:
        probe = eras.discover(headers)
        status, answer_headers, body = await self._post(probe.body, probe.headers)
        content_type = answer_headers.get("content-type", "")
        stateless = eras.stateless_era(status, content_type, body)
        if stateless is not None:
            return stateless
        opening = eras.initialize(headers)
        status, answer_headers, body = await self._post(opening.body, opening.headers)
        if status != 200:
            raise UpstreamRefused(f"the MCP server refused initialize (HTTP {status})", status)
        era = eras.session_era(status, answer_headers, answer_headers.get("content-type", ""), body)
        notification, notification_headers = eras.initialized(era, headers)
        await self._post(notification, notification_headers)
        if era.offers("logging"):  # every message: each client's own level filters what it receives
            level = eras.call(era, eras.INITIALIZE_ID + 1, "logging/setLevel", {"level": "debug"}, headers)
            await self._post(level.body, level.headers)
        return era

    async def _post(self, body: bytes, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        async with self._http.post(
            self._url, data=body, headers=headers, timeout=self._timeout, ssl=self._ssl, allow_redirects=False
        ) as response:
            read = await read_limited(response, MAX_OPENING_BYTES)
            if read is None:
                raise UpstreamError(f"the MCP server's answer to opening is larger than {MAX_OPENING_BYTES} bytes")
            return response.status, {k.lower(): v for k, v in response.headers.items()}, read

    async def close(self) -> None:
        """End the sessions this gateway holds (best effort: an upstream forgets idle sessions anyway)."""
        for key in list(self._listeners):
            self._stop_listening(key)
        if self._listening is not None:
            listening, self._listening = self._listening, None
            await listening.close()
        sessions, self._sessions = self._sessions, OrderedDict()
        for era, headers in sessions.values():
            if not era.ends_sessions:
                continue
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with self._http.delete(
                    self._url, headers=era.headers({}, headers), timeout=self._timeout, ssl=self._ssl
                ):
                    pass
