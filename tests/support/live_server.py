"""Serve an ASGI app on a free loopback port in a background thread, for tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def live_server(app: Any, on_shutdown: Callable[[], None] | None = None) -> Iterator[str]:
    """Yield the base URL (http://localhost:PORT) of `app` served by uvicorn until the block exits."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.serve(sockets=[sock]))

    thread = threading.Thread(target=run, name=f"live-server-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://localhost:{port}"
    finally:
        if on_shutdown is not None:
            loop.call_soon_threadsafe(on_shutdown)
        server.should_exit = True
        thread.join(timeout=10)
        loop.close()
        sock.close()
