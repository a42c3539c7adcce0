"""Run an aiohttp application on a free loopback port in a background thread, for tests."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from aiohttp import web


@contextmanager
def live_aiohttp(
    make_app: Callable[[], web.Application], tls: ssl.SSLContext | None = None, host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Yield http://127.0.0.1:PORT (https:// with `tls`; another loopback address with `host`, a given port with
    `port`) while the app serves."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    state: dict[str, object] = {}

    async def setup() -> None:
        runner = web.AppRunner(make_app())
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        state["runner"] = runner
        state["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(setup())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the test backend did not start")
    try:
        yield f"{'https' if tls else 'http'}://{host}:{state['port']}"
    finally:
        runner = state["runner"]
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)  # type: ignore[attr-defined]
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@asynccontextmanager
async def serving_here(app: web.Application) -> AsyncIterator[int]:
    """Serve `app` on a free 127.0.0.1 port of the running loop (the test's own), yielding the port; streams still
    open at the end are cut after half a second."""
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()
