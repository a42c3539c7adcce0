"""How a server starts and stops: on the socket it is given, saying so once it accepts connections, and with a
shutdown that ends long-lived streams.

A server tells its user where it answers (`on_listening`) only once its sockets accept connections: a client
started on that line must never be refused. Open SSE streams (GET streams, subscriptions/listen) never finish on their
own; uvicorn would wait for them forever on Ctrl-C. The server here ends them
first, then shuts down as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable
from socket import fromfd, socket
from typing import Any

import uvicorn

DRAIN_SECONDS = 0.5
OnListening = Callable[[], Awaitable[None] | None]
COLLECTOR_THRESHOLDS = (50_000, 20, 100)
"""When the cyclic collector runs once the long-lived objects are frozen: after 50,000 new container objects
(Python's default is 700), every 20th of those collections the middle generation, every 100th of these the
rest. A request makes hundreds of objects, nearly all freed by reference counting; under load (64 connections)
the default cost a gateway about 8% more CPU per request than these, with many requests' objects alive at each
collection, and no less at 4 connections; 200,000 measured slower than 50,000 (bench/README.md, the fast path)."""


def socket_from(listening: Any) -> socket:
    """A socket object on the same open socket as `listening` (an asyncio server's socket view)."""
    return fromfd(listening.fileno(), listening.family, listening.type)


def settle_memory() -> None:
    """Move everything alive now (modules, compiled services, snapshots) out of the collector's sight.

    Python's cyclic collector walks every tracked object on a full collection; with a gateway's long-lived
    objects that walk paused the event loop long enough to put the slowest requests at several times the
    typical latency. Objects alive at start (and after each snapshot) are never garbage: frozen, they are
    not walked again.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


_inherited: list[socket] = []


def inherit_socket(sock: socket) -> None:
    """Serve on `sock`, bound by a supervising process (`apimcp.servers.workers`), instead of binding host:port."""
    _inherited[:] = [sock]


BACKLOG_DRAIN_SECONDS = 0.2


class StreamClosingServer(uvicorn.Server):
    """A uvicorn server that stops gracefully behind a load balancer (SIGTERM or Ctrl-C).

    It stops accepting first (a balancer's next connection is refused and goes to another replica), ends
    long-lived streams (`on_shutdown`: their clients reconnect elsewhere), and gives connections accepted a
    moment ago `drain_seconds` to deliver their request: uvicorn would close a connection that has not sent
    one yet, and the client would see its request fail. Then requests in flight finish, within
    `timeout_graceful_shutdown`.
    """

    def __init__(
        self,
        config: uvicorn.Config,
        on_shutdown: Callable[[], None],
        drain_seconds: float = DRAIN_SECONDS,
        on_listening: OnListening | None = None,
    ) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown
        self._drain_seconds = drain_seconds
        self._on_listening = on_listening

    async def serve(self, sockets: list[socket] | None = None) -> None:
        settle_memory()
        await super().serve(sockets or list(_inherited) or None)

    async def startup(self, sockets: list[socket] | None = None) -> None:
        await super().startup(sockets)
        # uvicorn's servers are serving now (bound, listening and accepted from: asyncio starts serving on
        # creation; an inherited socket listened before the workers were forked).
        if self.started and not self.should_exit and self._on_listening is not None:
            outcome = self._on_listening()
            if outcome is not None:
                await outcome

    async def shutdown(self, sockets: list[socket] | None = None) -> None:
        await self._close_the_door()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        self._on_shutdown()
        await asyncio.sleep(self._drain_seconds)
        await super().shutdown()

    async def _close_the_door(self) -> None:
        """Empty the listening sockets' backlogs before closing them: closing resets every connection the
        kernel accepted but the server had not, and a balancer cannot tell whether such a request was served.
        With a backlog of 0, new connection attempts are dropped (the client tries again a second later and
        finds the port closed, so the balancer goes elsewhere) while the server still accepts what is queued."""
        shrunk = False
        for server in self.servers:
            for listening in server.sockets:
                with contextlib.suppress(OSError), socket_from(listening) as same:
                    same.listen(0)
                    shrunk = True
        if shrunk:
            await asyncio.sleep(BACKLOG_DRAIN_SECONDS)
