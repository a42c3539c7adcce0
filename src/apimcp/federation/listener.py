"""What a session-era upstream sends outside the request it answers: its session's GET stream.

Servers of the first Streamable HTTP generation (the Python SDK before 1.11) send a call's progress there rather
than on the call's own stream, and servers of any revision ask there what is not tied to a request (roots, a
ping). The gateway holds one GET stream per upstream session it holds (at most `MAX_LISTENERS` per server, over a
small connection pool of their own, so that streams never take the connections calls need), passes on each
progress notification to the call whose token it names (`ProgressRoutes`), tells the endpoints that serve the
server's resources which one changed (to the clients subscribed to it) and the gateway that a list changed,
answers a ping, and answers any other
request with an error (it belongs to no call, so no client to ask). A server without such a stream (405) is not
asked again; one that ends it is listened to again, a few times.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import aiohttp
import orjson

from apimcp.backends.base import Progress
from apimcp.federation import era as eras
from apimcp.mcp_client.sse import EventTooLarge, messages

log = logging.getLogger("apimcp.federation")

MAX_LISTENERS = 16
MAX_EVENT_BYTES = 1024 * 1024
MAX_RESTARTS = 3
MAX_URI = 8 * 1024
NOT_IN_A_CALL = -32601


LIST_CHANGES = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


class ProgressRoutes:
    """Which call hears the progress a token names, while it runs; who hears that a subscribed resource changed,
    and that the server's lists changed."""

    def __init__(self) -> None:
        self._routes: dict[str, Progress] = {}
        self.updated: list[Callable[[str], None]] = []
        """Told each URI the server says changed (the endpoints serving the server's resources)."""
        self.lists_changed: list[Callable[[str], None]] = []
        """Told which list (`tools`, `prompts`, `resources`) the server says changed (the gateway's runtime)."""

    def resource_updated(self, uri: str) -> None:
        for tell in self.updated:
            tell(uri)

    def _lists_changed(self, kind: str) -> None:
        for tell in self.lists_changed:
            tell(kind)

    async def notified(self, method: object, params: object) -> bool:
        """Act on a notification of the server's that concerns no request; False when it is none of those. What
        fails in telling it (a client gone) is logged and stops nothing: the stream it came on serves others."""
        try:
            if method == "notifications/progress" and isinstance(params, Mapping):
                await self.heard(params)
            elif method == "notifications/resources/updated" and isinstance(params, Mapping):
                uri = params.get("uri")
                if isinstance(uri, str) and len(uri) <= MAX_URI:
                    self.resource_updated(uri)
            elif isinstance(method, str) and method in LIST_CHANGES:
                self._lists_changed(LIST_CHANGES[method])
            else:
                return False
        except Exception as exc:
            log.info("a notification of an MCP server could not be passed on: %s", type(exc).__name__)
        return True

    @contextlib.contextmanager
    def route(self, token: str, progress: Progress | None) -> Iterator[None]:
        if progress is None:
            yield
            return
        self._routes[token] = progress
        try:
            yield
        finally:
            self._routes.pop(token, None)

    async def heard(self, params: Mapping[str, Any]) -> None:
        token = params.get("progressToken")
        progress = self._routes.get(token) if isinstance(token, str) else None
        done, total, note = _number(params.get("progress")), _number(params.get("total")), params.get("message")
        if progress is not None and done is not None:
            await progress(done, total, note if isinstance(note, str) else None)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class SessionListener:
    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        era: eras.Era,
        headers: Mapping[str, str],
        routes: ProgressRoutes,
        tls: ssl.SSLContext | bool,
    ) -> None:
        self._http = http
        self._url = url
        self._era = era
        self._headers = dict(headers)
        self._routes = routes
        self._ssl = tls
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        headers = {**self._era.headers({}, self._headers), "Accept": "text/event-stream"}
        headers.pop("Content-Type", None)
        for restart in range(MAX_RESTARTS + 1):
            try:
                async with self._http.get(
                    self._url, headers=headers, ssl=self._ssl, timeout=_STREAM, allow_redirects=False
                ) as response:
                    if response.status != 200 or response.content_type != "text/event-stream":
                        return  # no stream for this session (405): nothing is sent outside calls
                    async for message in messages(response, MAX_EVENT_BYTES):
                        await self._heard(message)
            except (aiohttp.ClientError, TimeoutError, EventTooLarge) as exc:
                log.info("an MCP server's session stream ended: %s", type(exc).__name__)
            await asyncio.sleep(min(2**restart, 10))

    async def _heard(self, message: object) -> None:
        if not isinstance(message, Mapping):
            return
        method = message.get("method")
        if "id" not in message and await self._routes.notified(method, message.get("params")):
            return
        if "id" not in message or not isinstance(method, str):
            return
        if method == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            text = f"apimcp relays {method[:60]} to a client only during one of its calls"
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": NOT_IN_A_CALL, "message": text}}
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with self._http.post(
                self._url,
                data=orjson.dumps(reply),
                headers=self._era.headers(reply, self._headers),
                ssl=self._ssl,
                timeout=_ANSWER,
                allow_redirects=False,
            ):
                pass


_STREAM = aiohttp.ClientTimeout(total=None, sock_connect=10)
_ANSWER = aiohttp.ClientTimeout(total=10)
