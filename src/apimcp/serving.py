"""Running MCP endpoints under uvicorn, with a shutdown that ends long-lived streams.

Open SSE streams (GET streams, subscriptions/listen) never finish on their
own; uvicorn would wait for them forever on Ctrl-C. The server here ends them
first, then shuts down as usual.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from socket import socket
from typing import Any, TypeVar

import uvicorn

from apimcp.bounded_http import head_bounded_protocol
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.protocol.limits import EndpointLimits

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


class StreamClosingServer(uvicorn.Server):
    """A uvicorn server that calls `on_shutdown` before waiting for open connections."""

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_shutdown = on_shutdown

    async def shutdown(self, sockets: list[socket] | None = None) -> None:
        self._on_shutdown()
        await super().shutdown(sockets)


def server_for(
    app: AsgiApp,
    on_shutdown: Callable[[], None],
    *,
    host: str,
    port: int,
    log_level: str = "warning",
    limits: EndpointLimits | None = None,
) -> StreamClosingServer:
    """A server for `app`; request heads are bounded as `limits` say (the defaults when None)."""
    config = uvicorn.Config(
        app,
        http=head_bounded_protocol(limits or EndpointLimits()),
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    return StreamClosingServer(config, on_shutdown)
