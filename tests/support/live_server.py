"""Serve an ASGI app on a free loopback port in a background thread, for tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any

import uvicorn


@asynccontextmanager
async def _given(app: Any) -> AsyncIterator[Any]:
    yield app


@contextmanager
def live_server(app: Any, on_shutdown: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield the base URL (http://localhost:PORT) of `app` served by uvicorn until the block exits."""
    with live_app(lambda: _given(app), on_shutdown) as base:
        yield base


@contextmanager
def live_app(
    make_app: Callable[[], AbstractAsyncContextManager[Any]],
    on_shutdown: Callable[[], None] | None = None,
    port: int = 0,
) -> Iterator[str]:
    """Like live_server, for an app that must be built inside the serving loop (aiohttp sessions...); on `port`
    when one is given (a URL that must be known before the app starts)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    loop = asyncio.new_event_loop()
    servers: list[uvicorn.Server] = []
    failure: list[BaseException] = []

    async def serve() -> None:
        async with make_app() as app:
            config = uvicorn.Config(
                app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=2
            )
            server = uvicorn.Server(config)
            servers.append(server)
            await server.serve(sockets=[sock])

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(serve())
        except BaseException as exc:  # reported to the test below
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"live-server-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not (servers and servers[0].started):
        if failure:
            raise RuntimeError("the test server failed to start") from failure[0]
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://localhost:{port}"
    finally:
        if on_shutdown is not None:
            loop.call_soon_threadsafe(on_shutdown)
        servers[0].should_exit = True
        thread.join(timeout=10)
        loop.close()
        sock.close()


async def whole_body(receive: Any) -> bytes:
    """Every chunk of an ASGI request's body, joined (for the small servers tests write)."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
