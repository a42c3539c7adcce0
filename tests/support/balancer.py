"""A plain round-robin HTTP load balancer for tests: no stickiness, each request to the next upstream.

Like nginx's default `proxy_next_upstream error timeout`, minus what nginx may retry of a non-idempotent
request: a request whose upstream refuses the connection, or does not accept it in time, goes to the next
upstream (a stopping replica no longer accepts, so nothing was sent); one whose connection is dropped
before an answer is answered 502, because the upstream may have acted on it. Responses, SSE streams
included, are passed on as they arrive. Each request uses a new upstream connection, and the balancer
notes which upstream answered it (`served`), so tests can check that every request of a session landed
somewhere else.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

_HOP_BY_HOP = frozenset(
    ("connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection", "host")
)


@dataclass
class Balancer:
    upstreams: list[str]
    served: list[str] = field(default_factory=list)
    """The upstream of every answered request, in order."""
    retried: int = 0
    """Requests sent to another upstream because theirs refused the connection."""
    dropped: int = 0
    """Requests answered 502 because their upstream dropped the connection before answering."""

    def __post_init__(self) -> None:
        self._turn = itertools.count()

    def app(self) -> Callable[[], web.Application]:
        def make() -> web.Application:
            application = web.Application(client_max_size=16 * 1024 * 1024)
            application.router.add_route("*", "/{tail:.*}", self._proxy)
            return application

        return make

    async def _proxy(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["X-Forwarded-Host"] = request.host
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)  # a busy machine's accept, not a dead upstream
        first = next(self._turn)  # this request's turn; a retry goes to the next upstream after the one that refused
        for attempt in range(2 * len(self.upstreams)):
            upstream = self.upstreams[(first + attempt) % len(self.upstreams)]
            session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(force_close=True), timeout=timeout, auto_decompress=False
            )
            try:
                answer = await session.request(
                    request.method, upstream + request.path_qs, data=body, headers=headers, allow_redirects=False
                )
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError):  # not connected: nothing sent
                await session.close()
                if attempt + 1 < 2 * len(self.upstreams):
                    self.retried += 1
                continue
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                await session.close()
                self.dropped += 1
                return web.Response(status=502, text=f"the upstream dropped the connection ({type(exc).__name__})")
            except BaseException:  # cancelled (the balancer stops) or anything else: the session is closed all the same
                await session.close()
                raise
            try:
                self.served.append(upstream)
                response = web.StreamResponse(status=answer.status)
                for name, value in answer.headers.items():
                    if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length":
                        response.headers.add(name, value)
                await response.prepare(request)
                try:
                    async for chunk in answer.content.iter_any():
                        await response.write(chunk)
                except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                    pass  # the upstream went away mid-stream: end the client's response as it did
                await response.write_eof()
                return response
            finally:
                answer.release()
                await session.close()
        return web.Response(status=502, text="no upstream answered")
