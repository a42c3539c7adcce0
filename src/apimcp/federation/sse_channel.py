"""The 2024-11-05 HTTP+SSE transport to an upstream MCP server: one GET stream carries everything it sends.

The stream's first event (`endpoint`) names where requests are POSTed; every answer, notification and request of
the server's then arrives on the stream, matched to its request by id. The endpoint must be on the stream's own
origin (the credentials go there on every request). A channel reads its stream in a task of its own: answers
reach their waiting request, progress the call whose token it names (`ProgressRoutes`), a ping is answered, and
any other request of the server's is answered with an error (the transport ties none to a call, so none to a
client). Each event is bounded; a stream that ends fails what waits on it, and the channel is then closed (the
next call opens another).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.federation.listener import ProgressRoutes
from apimcp.mcp_client.answers import UpstreamError, response_to
from apimcp.mcp_client.sse import EventTooLarge, events, parsed_event

OPENING_SECONDS = 10.0
"""How long the stream may take to name its endpoint."""
NOT_IN_A_CALL = -32601


class ChannelClosed(UpstreamError):
    """The server's stream ended: what waited on it is failed, and the channel is not used again."""


class SseChannel:
    def __init__(
        self,
        http: aiohttp.ClientSession,
        url: str,
        headers: Mapping[str, str],
        routes: ProgressRoutes,
        *,
        posts: aiohttp.ClientSession | None = None,
        tls: ssl.SSLContext | bool = True,
        max_event_bytes: int = 10 * 1024 * 1024,
        transform: Callable[[bytes], bytes] | None = None,
    ) -> None:
        """`http` holds the stream; `posts` (default: `http`) sends the requests."""
        self._http = http
        self._posts = posts or http
        self._url = yarl.URL(url)
        self._headers = dict(headers)
        self._routes = routes
        self._ssl = tls
        self._max_event_bytes = max_event_bytes
        self._transform = transform
        """Applied to each event's data (masking credentials the server echoes)."""
        self._endpoint: yarl.URL | None = None
        self._waiting: dict[int, asyncio.Future[Mapping[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task[None] | None = None
        self._telling: set[asyncio.Task[None]] = set()
        self._response: aiohttp.ClientResponse | None = None
        self.closed = False

    async def open(self) -> None:
        """Connect, and wait for the endpoint; `UpstreamError` when the URL is no HTTP+SSE endpoint."""
        headers = {**self._headers, "Accept": "text/event-stream"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=OPENING_SECONDS, sock_read=None)
        response = await self._http.get(self._url, headers=headers, ssl=self._ssl, timeout=timeout)
        self._response = response
        if response.status != 200 or response.content_type != "text/event-stream":
            response.release()
            raise UpstreamError(f"the server answered no MCP transport this gateway speaks (HTTP {response.status})")
        stream = events(response, self._max_event_bytes, transform=self._transform)
        try:
            async with asyncio.timeout(OPENING_SECONDS):
                name, data = await anext(stream)
        except (TimeoutError, StopAsyncIteration, EventTooLarge):
            response.release()
            raise UpstreamError("the server's SSE stream named no endpoint to post to") from None
        target = b"\n".join(data).decode("utf-8", "replace").strip()
        endpoint = self._url.join(yarl.URL(target)) if name == "endpoint" and target else None
        if endpoint is None or endpoint.origin() != self._url.origin():
            response.release()
            raise UpstreamError("the server's SSE stream names no endpoint on its own origin")
        self._endpoint = endpoint
        self._reader = asyncio.get_running_loop().create_task(self._read(stream))

    async def request(self, method: str, params: Mapping[str, Any], within: float) -> Mapping[str, Any]:
        """The result of `method` (an `UpstreamError` for the server's error, `ChannelClosed` when its stream
        ended first)."""
        request_id = next(self._ids)
        waiting: asyncio.Future[Mapping[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiting
        try:
            await self._post({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
            async with asyncio.timeout(within):
                return await waiting
        except (asyncio.CancelledError, TimeoutError):
            self._tell_cancelled(request_id)  # the server stops working for nobody
            raise
        finally:
            self._waiting.pop(request_id, None)

    def _tell_cancelled(self, request_id: int) -> None:
        if self.closed:
            return
        params = {"requestId": request_id, "reason": "the gateway's client cancelled the call, or it timed out"}

        async def tell() -> None:
            with contextlib.suppress(UpstreamError, aiohttp.ClientError, TimeoutError):
                await self.notify("notifications/cancelled", params)

        task = asyncio.get_running_loop().create_task(tell())
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        await self._post({"jsonrpc": "2.0", "method": method, **({"params": dict(params)} if params else {})})

    async def _post(self, message: Mapping[str, Any]) -> None:
        if self.closed or self._endpoint is None:
            raise ChannelClosed("the server's SSE stream has ended")
        headers = {**self._headers, "Content-Type": "application/json"}
        async with self._posts.post(
            self._endpoint,
            data=orjson.dumps(message),
            headers=headers,
            ssl=self._ssl,
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=OPENING_SECONDS),
        ) as response:
            if response.status >= 300:
                raise UpstreamError(f"the server refused a message (HTTP {response.status})")

    async def _read(self, stream: Any) -> None:
        try:
            async for name, data in stream:
                if name == "message":
                    await self._heard(parsed_event(data))
        except (aiohttp.ClientError, EventTooLarge, TimeoutError):
            pass
        finally:
            self._end()

    async def _heard(self, message: object) -> None:
        if not isinstance(message, Mapping):
            return
        request_id = message.get("id")
        if "method" not in message and isinstance(request_id, int):
            waiting = self._waiting.get(request_id)
            if waiting is not None and not waiting.done():
                try:
                    result = response_to(message, request_id)
                except UpstreamError as exc:
                    waiting.set_exception(exc)
                else:
                    if result is not None:
                        waiting.set_result(result)
            return
        method, params = message.get("method"), message.get("params")
        if method == "notifications/progress" and isinstance(params, Mapping):
            await self._routes.heard(params)
        elif "id" in message and isinstance(method, str):
            if method == "ping":
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": {}}
            else:
                text = f"apimcp relays {method[:60]} of an HTTP+SSE server to no client"
                reply = {"jsonrpc": "2.0", "id": request_id, "error": {"code": NOT_IN_A_CALL, "message": text}}
            with contextlib.suppress(UpstreamError, aiohttp.ClientError, TimeoutError):
                await self._post(reply)

    def _end(self) -> None:
        self.closed = True
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(ChannelClosed("the server's SSE stream ended"))
                waiting.exception()  # retrieved: the caller may already have gone
        if self._response is not None:
            self._response.release()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._end()
