"""A backend that echoes its requests in every spelling an answer may use, and redirects anywhere.

Each server records the requests it received (`Recorder.seen`), so a test can
tell what reached another origin after a redirect.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.support.live_aiohttp import live_aiohttp


@dataclass
class Recorder:
    url: str = ""
    seen: list[dict[str, Any]] = field(default_factory=list)


def _echo(request: web.Request, body: str | None) -> dict[str, Any]:
    return {
        "method": request.method,
        "target": request.raw_path,
        "headers": {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")},
        "query": request.rel_url.raw_query_string,
        "cookies": dict(request.cookies),
        "body": body,
    }


def create_app(recorder: Recorder) -> web.Application:
    async def record(request: web.Request) -> dict[str, Any]:
        body = (await request.read()).decode() or None
        echo = _echo(request, body)
        recorder.seen.append(echo)
        return echo

    async def echo(request: web.Request) -> web.Response:
        seen = await record(request)
        style = request.query.get("style", "json")
        if style == "slashes":  # what PHP's json_encode writes: '/' as '\/', non-ASCII as \uXXXX
            return web.Response(text=json.dumps(seen).replace("/", "\\/"), content_type="application/json")
        if style == "ascii":
            return web.Response(text=json.dumps(seen, ensure_ascii=True), content_type="application/json")
        pairs = [*seen["headers"].items(), *seen["cookies"].items(), ("query", request.query_string)]
        if style == "text":
            return web.Response(text="\n".join(f"{k}: {v}" for k, v in pairs), content_type="text/plain")
        if style == "error":
            return web.Response(status=401, text=f"refused: {seen}", content_type="text/plain")
        if style == "percent":
            encoded = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
            return web.Response(text=encoded, content_type="text/plain")
        return web.json_response(seen)

    async def hops(request: web.Request) -> web.Response:
        await record(request)
        count = int(request.match_info["count"])
        if count == 0:
            return web.json_response(recorder.seen[-1])
        raise web.HTTPFound(f"/v1/hops/{count - 1}")

    async def moved(request: web.Request) -> web.Response:
        await record(request)
        status = int(request.match_info["status"])
        return web.Response(status=status, headers={"Location": "/v1/echo"})

    async def away(request: web.Request) -> web.Response:
        await record(request)
        status = int(request.query.get("status", "302"))
        return web.Response(status=status, headers={"Location": request.query["to"]})

    app = web.Application()
    app.router.add_route("*", "/v1/echo", echo)
    app.router.add_get("/v1/hops/{count}", hops)
    app.router.add_post("/v1/moved/{status}", moved)
    app.router.add_route("*", "/v1/away", away)
    app.router.add_route("*", "/{tail:.*}", echo)  # another origin's landing page: records and echoes
    return app


@contextmanager
def hostile_backend() -> Iterator[Recorder]:
    """A hostile backend on a free loopback port; `url` is its base URL (with /v1)."""
    recorder = Recorder()
    with live_aiohttp(lambda: create_app(recorder)) as base:
        recorder.url = f"{base}/v1"
        yield recorder
