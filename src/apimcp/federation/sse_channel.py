"""The 2024-11-05 HTTP+SSE transport to an upstream MCP server: one GET stream carries everything it sends.

The stream's first event (`endpoint`) names where requests are POSTed; every answer, notification and request of
the server's then arrives on the stream, handled as on any channel (`message_channel.py`). The endpoint must be on
the stream's own origin (the credentials go there on every request). Each event is bounded.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.federation.listener import ProgressRoutes
from apimcp.federation.message_channel import ChannelClosed, MessageChannel
from apimcp.mcp_client.answers import UpstreamError
from apimcp.mcp_client.sse import EventTooLarge, events, parsed_event

OPENING_SECONDS = 10.0
"""How long the stream may take to name its endpoint."""


class SseChannel(MessageChannel):
    ended_because = "the server's SSE stream ended"

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
        super().__init__(routes)
        self._http = http
        self._posts = posts or http
        self._url = yarl.URL(url)
        self._headers = dict(headers)
        self._ssl = tls
        self._max_event_bytes = max_event_bytes
        self._transform = transform
        """Applied to each event's data (masking credentials the server echoes)."""
        self._endpoint: yarl.URL | None = None
        self._response: aiohttp.ClientResponse | None = None

    async def open(self) -> None:
        """Connect, and wait for the endpoint; `UpstreamError` when the URL is no HTTP+SSE endpoint."""
        headers = {**self._headers, "Accept": "text/event-stream"}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=OPENING_SECONDS, sock_read=None)
        try:
            async with asyncio.timeout(OPENING_SECONDS):  # a server that never sends its headers holds no caller
                response = await self._http.get(
                    self._url, headers=headers, ssl=self._ssl, timeout=timeout, allow_redirects=False
                )
        except TimeoutError:
            raise UpstreamError(f"the server did not answer the opening of its event stream within "
                                f"{OPENING_SECONDS:g} s") from None  # fmt: skip
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
        # the stream's query (an API key placed there) goes with every message too, unless the endpoint names it
        missing = [(name, value) for name, value in self._url.query.items() if name not in endpoint.query]
        self._endpoint = endpoint.extend_query(missing) if missing else endpoint
        self._reader = asyncio.get_running_loop().create_task(self._read(stream))

    async def _send(self, message: Mapping[str, Any]) -> None:
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

    async def _release(self) -> None:
        if self._response is not None:
            self._response.release()
