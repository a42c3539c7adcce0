"""Running MCP endpoints under uvicorn, with a shutdown that ends long-lived streams.

Open SSE streams (GET streams, subscriptions/listen) never finish on their
own; uvicorn would wait for them forever on Ctrl-C. The server here ends them
first, then shuts down as usual. Every server bounds request heads
(`apimcp.head_limits`) and can listen with TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from socket import fromfd, socket
from typing import Any, TypeVar

import uvicorn

from apimcp.head_limits import HeadLimits, uvicorn_settings
from apimcp.protocol.exchange import Receive, Scope, Send

AsgiApp = Callable[[Scope, Receive, Send], object]
T = TypeVar("T")


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when it is installed (it is with uvicorn[standard]), else asyncio's loop.

    uvicorn picks uvloop only when it creates the loop itself; a gateway that starts its backend
    session and its server in one loop must pick it here, or lose about a third of its throughput.
    """
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


DRAIN_SECONDS = 0.5


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


_inherited: list[socket] = []


def inherit_socket(sock: socket) -> None:
    """Serve on `sock`, bound by a supervising process (`apimcp.workers`), instead of binding host:port."""
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
        self, config: uvicorn.Config, on_shutdown: Callable[[], None], drain_seconds: float = DRAIN_SECONDS
    ) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown
        self._drain_seconds = drain_seconds

    async def serve(self, sockets: list[socket] | None = None) -> None:
        settle_memory()
        await super().serve(sockets or list(_inherited) or None)

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


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The certificate (chain, PEM) and private key a listener presents to its clients."""

    certificate: Path
    key: Path

    def check(self) -> None:
        """Load both files as the server will, so that a wrong path or a mismatched key fails before serving."""
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(self.certificate, self.key)
        except FileNotFoundError as exc:
            raise ValueError(f"TLS: cannot read {exc.filename}") from None
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(
                f"TLS: {self.certificate} and {self.key} are not a PEM certificate and its private key ({exc})"
            ) from None


def server_for(
    app: AsgiApp,
    on_shutdown: Callable[[], None],
    *,
    host: str,
    port: int,
    log_level: str = "warning",
    tls: ServerTls | None = None,
    head_limits: HeadLimits | None = None,
) -> StreamClosingServer:
    tls_settings: dict[str, Any] = {}
    if tls is not None:
        tls.check()
        tls_settings = {"ssl_certfile": str(tls.certificate), "ssl_keyfile": str(tls.key)}
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        **uvicorn_settings(head_limits or HeadLimits()),
        **tls_settings,
    )
    return StreamClosingServer(config, on_shutdown)
