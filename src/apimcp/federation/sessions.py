"""A gateway's connections to one upstream MCP server: the era it speaks, and its sessions.

The era is learnt once, by the first call (`era.py`). A stateless upstream needs nothing more. A session-era
one gets a session per credential the gateway calls it with (the plan's own, or each user's), opened on first
use, reused by every call with that credential, and opened again when the upstream forgets it (a 404 on the
session: `forget`). One opening at a time per credential; at most `MAX_SESSIONS` sessions are kept, the least
recently used let go first. A session of the 2024-11-05 HTTP+SSE transport is a stream held open
(`sse_channel.py`); a stdio server is one child process for every caller of this backend (an exposition's
member), started on first use and again when it exits (`stdio_channel.py`). Each replica holds its own sessions:
an upstream session carries nothing a client needs to find again on another replica, so none is shared through
the state store.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import OrderedDict
from collections.abc import Coroutine, Mapping
from typing import Any

import aiohttp

from apimcp.backends.http_common import read_limited
from apimcp.backends.rest import new_session
from apimcp.federation import era as eras
from apimcp.federation.listener import MAX_LISTENERS, ProgressRoutes, SessionListener
from apimcp.federation.message_channel import MessageChannel
from apimcp.federation.sse_channel import SseChannel
from apimcp.federation.stdio_channel import StdioChannel, StdioCommand
from apimcp.federation.subscription import UpstreamSubscription
from apimcp.mcp_client.answers import UpstreamError
from apimcp.safety.masking import NO_MASK, SecretMask

MAX_SESSIONS = 256
MAX_OPENING_BYTES = 1024 * 1024
"""An answer to server/discover or initialize larger than this is refused."""


class UpstreamRefused(UpstreamError):
    """The upstream refused to open: `status` is its HTTP status (401: the credential is not accepted)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class _OpenerGone(Exception):
    """The call that was opening a session was cancelled before it opened."""


class UpstreamSessions:
    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        *,
        timeout: aiohttp.ClientTimeout,
        tls: ssl.SSLContext | bool = True,
        max_sessions: int = MAX_SESSIONS,
        command: StdioCommand | None = None,
        max_message_bytes: int = 10 * 1024 * 1024,
    ) -> None:
        """`command`: the upstream is a stdio server, started so (`url` only names it), each line it writes at
        most `max_message_bytes`."""
        self._http = http
        self._command = command
        self._max_message_bytes = max_message_bytes
        self._url = url
        self._timeout = timeout
        self._ssl = tls
        self._max = max_sessions
        self._stateless: eras.Era | None = None
        self._subscription: UpstreamSubscription | None = None
        """A stateless upstream's subscriptions/listen stream (`subscription.py`)."""
        self._sessions: OrderedDict[str, tuple[eras.Era, Mapping[str, str], str]] = OrderedDict()
        """Each credential's session, with the credential's headers and URL (to end the session with)."""
        self._opening: dict[str, asyncio.Future[eras.Era]] = {}
        self.routes = ProgressRoutes()
        """The calls in flight that hear progress from the sessions' GET streams (`listener.py`)."""
        self._listeners: dict[str, SessionListener] = {}
        self._listening: aiohttp.ClientSession | None = None
        """The small pool the GET streams use, apart from the calls' connections."""
        self._closing: set[asyncio.Task[None]] = set()

    async def era(
        self,
        key: str,
        headers: Mapping[str, str],
        mask: SecretMask = NO_MASK,
        *,
        own_headers: Mapping[str, str] | None = None,
        url: str | None = None,
    ) -> eras.Era:
        """How to call the upstream with the credential `key` names (its `headers`, and `url`: the server's URL
        with the credential's query, an API key placed there; `mask` hides their values in what an HTTP+SSE
        session's stream carries). `own_headers`: the plan's own credential alone, when the call carries no user's
        or client's: a 2026-07-28 upstream's listen stream, which serves every client, is opened only with those."""
        url = url or self._url
        if self._stateless is not None:
            if own_headers is not None:
                if self._subscription is None:
                    self._subscribe(self._stateless, own_headers, url)
                else:
                    self._subscription.use(own_headers, url)
            return self._stateless
        if self._command is not None:
            key = ""  # one process serves every caller: a stdio server has no credentials of the caller's
        known = self._sessions.get(key)
        if known is not None:
            self._sessions.move_to_end(key)
            return known[0]
        pending = self._opening.get(key)
        if pending is not None:
            try:
                return await asyncio.shield(pending)
            except _OpenerGone:  # the call opening it was cancelled: this one opens it now
                return await self.era(key, headers, mask, own_headers=own_headers, url=url)
        future: asyncio.Future[eras.Era] = asyncio.get_running_loop().create_future()
        self._opening[key] = future
        try:
            opened = await self._open(headers, mask, url)
        except BaseException as exc:
            # a cancellation is the opener's own (its client went away): the others waiting try again
            future.set_exception(_OpenerGone() if isinstance(exc, asyncio.CancelledError) else exc)
            future.exception()  # retrieved: callers waiting on it get it, nobody else must
            raise
        finally:
            del self._opening[key]
        future.set_result(opened)
        if opened.stateless:
            self._stateless = opened
            if own_headers is not None:
                self._subscribe(opened, own_headers, url)
        else:
            self._sessions[key] = (opened, dict(headers), url)
            self._listen(key, opened, headers, url)
            while len(self._sessions) > self._max:
                evicted, (era, evicted_headers, evicted_url) = self._sessions.popitem(last=False)
                self._stop_listening(evicted)
                self._close_channel(era)
                self._end_later(era, evicted_headers, evicted_url)
        return opened

    def forget(self, key: str, era: eras.Era) -> None:
        """The upstream no longer knows `era`'s session: the next call opens another."""
        if self._command is not None:
            key = ""
        known = self._sessions.get(key)
        if known is not None and known[0] is era:
            del self._sessions[key]
            self._stop_listening(key)
            self._close_channel(era)

    def _subscribe(self, era: eras.Era, headers: Mapping[str, str], url: str) -> None:
        if self._listening is None:
            self._listening = new_session(limit=MAX_LISTENERS)
        self._subscription = UpstreamSubscription(self._listening, url, era, headers, self.routes, self._ssl)
        self._subscription.start()

    async def subscribe(self, uri: str) -> bool:
        """Follow a resource of a stateless upstream, once the server acknowledged it (False: it takes no
        subscriptions, or too many)."""
        return self._subscription is not None and await self._subscription.subscribe(uri)

    def _listen(self, key: str, era: eras.Era, headers: Mapping[str, str], url: str) -> None:
        if era.negotiated.session_id is None or len(self._listeners) >= MAX_LISTENERS:
            return
        if self._listening is None:
            self._listening = new_session(limit=MAX_LISTENERS)
        self._listeners[key] = SessionListener(self._listening, url, era, headers, self.routes, self._ssl)

    def _close_channel(self, era: eras.Era) -> None:
        if era.channel is not None:
            self._close_later(era.channel)

    def _close_later(self, channel: MessageChannel) -> None:
        self._in_background(channel.close())

    def _end_later(self, era: eras.Era, headers: Mapping[str, str], url: str) -> None:
        """End a session the gateway lets go of while running (the least recently used, past `MAX_SESSIONS`)."""
        if era.ends_sessions:
            self._in_background(self._end(era, headers, url))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _end(self, era: eras.Era, headers: Mapping[str, str], url: str) -> None:
        """DELETE the session (best effort: an upstream forgets idle sessions anyway)."""
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with self._http.delete(
                url, headers=era.headers({}, headers), timeout=self._timeout, ssl=self._ssl, allow_redirects=False
            ):
                pass

    def _stop_listening(self, key: str) -> None:
        listener = self._listeners.pop(key, None)
        if listener is not None:
            listener.stop()

    async def _open(self, headers: Mapping[str, str], mask: SecretMask, url: str) -> eras.Era:
        if self._command is not None:
            masked = SecretMask(self._command.secrets)
            transform = masked.mask_bytes if masked else None
            stdio = StdioChannel(
                self._command, self.routes, max_line_bytes=self._max_message_bytes, transform=transform
            )
            return await self._initialized(stdio)
        probe = eras.discover(headers)
        status, answer_headers, body = await self._post(url, probe.body, probe.headers)
        content_type = answer_headers.get("content-type", "")
        stateless = eras.stateless_era(status, content_type, body)
        if stateless is not None:
            return stateless
        opening = eras.initialize(headers)
        status, answer_headers, body = await self._post(url, opening.body, opening.headers)
        if status in eras.SSE_STATUSES:  # no POST here: a server of the 2024-11-05 HTTP+SSE transport, maybe
            return await self._open_channel(headers, mask, url)
        if status != 200:
            raise UpstreamRefused(f"the MCP server refused initialize (HTTP {status})", status)
        era = eras.session_era(status, answer_headers, answer_headers.get("content-type", ""), body)
        notification, notification_headers = eras.initialized(era, headers)
        await self._post(url, notification, notification_headers)
        if era.offers("logging"):  # every message: each client's own level filters what it receives
            level = eras.call(era, eras.INITIALIZE_ID + 1, "logging/setLevel", {"level": "debug"}, headers)
            await self._post(url, level.body, level.headers)
        return era

    async def _open_channel(self, headers: Mapping[str, str], mask: SecretMask, url: str) -> eras.Era:
        """A session of the 2024-11-05 HTTP+SSE transport: its stream held (over the GET streams' own pool, at
        most `MAX_LISTENERS` of them), then initialize on it."""
        if sum(1 for era, _, _ in self._sessions.values() if era.channel is not None) >= MAX_LISTENERS:
            raise UpstreamError(f"the gateway holds {MAX_LISTENERS} streams with this HTTP+SSE server already")
        if self._listening is None:
            self._listening = new_session(limit=MAX_LISTENERS)
        channel = SseChannel(
            self._listening,
            url,
            headers,
            self.routes,
            posts=self._http,
            tls=self._ssl,
            transform=mask.mask_bytes if mask else None,
        )
        return await self._initialized(channel)

    async def _initialized(self, channel: MessageChannel) -> eras.Era:
        """The session `channel` carries, opened and initialized (or closed again)."""
        try:
            await channel.open()
            result = await channel.request("initialize", eras.initialize_params(), self._timeout.total or 30)
            era = eras.opened_era(result, {}, channel)
            await channel.notify("notifications/initialized")
        except asyncio.CancelledError:
            self._close_later(channel)  # no waiting for a child to stop while being cancelled
            raise
        except BaseException:
            await channel.close()
            raise
        return era

    async def _post(self, url: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        async with self._http.post(
            url, data=body, headers=headers, timeout=self._timeout, ssl=self._ssl, allow_redirects=False
        ) as response:
            read = await read_limited(response, MAX_OPENING_BYTES)
            if read is None:
                raise UpstreamError(f"the MCP server's answer to opening is larger than {MAX_OPENING_BYTES} bytes")
            return response.status, {k.lower(): v for k, v in response.headers.items()}, read

    async def close(self) -> None:
        """End the sessions this gateway holds (best effort: an upstream forgets idle sessions anyway)."""
        for key in list(self._listeners):
            self._stop_listening(key)
        if self._subscription is not None:
            self._subscription.stop()
        if self._listening is not None:
            listening, self._listening = self._listening, None
            await listening.close()
        for era, _, _ in self._sessions.values():
            if era.channel is not None:
                await era.channel.close()
        sessions, self._sessions = self._sessions, OrderedDict()
        for era, headers, url in sessions.values():
            if era.ends_sessions:
                await self._end(era, headers, url)
        if self._closing:  # sessions let go of earlier, still being ended
            await asyncio.gather(*self._closing, return_exceptions=True)
