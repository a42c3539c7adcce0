"""A REST backend that takes 50 ms to answer: `GET /items/{itemId}` sleeps, then returns the small JSON item.

It stands for a real API's latency behind a scripted custom tool's fan-out (`bench/artifacts_bench.py`).

    python -m bench.slow_backend --port 8082 [--delay-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio

import uvloop
from aiohttp import web

ITEM = b'{"id":1,"name":"widget","price":9.5}'


def make_app(delay: float) -> web.Application:
    async def item(_: web.Request) -> web.Response:
        await asyncio.sleep(delay)
        return web.Response(body=ITEM, content_type="application/json")

    app = web.Application()
    app.router.add_get("/items/{itemId}", item)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    args = parser.parse_args()
    uvloop.install()
    web.run_app(make_app(args.delay_ms / 1000), host="127.0.0.1", port=args.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
