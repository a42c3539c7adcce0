"""A backend that answers with the request it received, plus media, statuses and slow answers."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import orjson
from aiohttp import web

from tests.protocol.showcase import PNG, WAV


def digest(value: str) -> str:
    """How the echo shows each header value a second time: a gateway masks credentials it echoes, but not
    their digests, so tests can tell which value arrived."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


async def _echo(request: web.Request) -> web.Response:
    body = await request.read()
    try:
        text: str | None = body.decode()
    except UnicodeDecodeError:
        text = None
    echo = {
        "method": request.method,
        "path": request.raw_path.split("?", 1)[0],
        "query": request.rel_url.raw_query_string,
        "headers": {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")},
        "header_digests": {k: digest(v) for k, v in request.headers.items()},
        "cookies": dict(request.cookies),
        "content_type": request.headers.get("Content-Type"),
        "body": text,
        "body_base64": base64.b64encode(body).decode() if body else None,
    }
    return web.json_response(echo)


async def _media(request: web.Request) -> web.Response:
    kind = request.match_info["kind"]
    if kind == "png":
        return web.Response(body=base64.b64decode(PNG), content_type="image/png")
    if kind == "wav":
        return web.Response(body=base64.b64decode(WAV), content_type="audio/wav")
    if kind == "pdf":
        return web.Response(body=b"%PDF-1.4 fake", content_type="application/pdf")
    if kind == "text":
        return web.Response(text="plain words", content_type="text/plain")
    if kind == "empty":
        return web.Response(status=204)
    return web.json_response([1, 2, 3])


async def _shape(request: web.Request) -> web.Response:
    if request.match_info["kind"] == "good":
        return web.json_response({"sides": 3})
    return web.json_response({"sides": "three"})  # not what the description promises


async def _status(request: web.Request) -> web.Response:
    code = int(request.match_info["code"])
    return web.Response(status=code, text=f"status {code} body", content_type="text/plain")


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(5)
    return web.json_response({"late": True})


async def _big(request: web.Request) -> web.Response:
    return web.Response(body=b"x" * (2 * 1024 * 1024), content_type="text/plain")


def create_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/v1/media/{kind}", _media)
    app.router.add_get("/v1/shapes/{kind}", _shape)
    app.router.add_get("/v1/status/{code}", _status)
    app.router.add_get("/v1/slow", _slow)
    app.router.add_get("/v1/big", _big)
    app.router.add_post("/v1/lists", _list)
    app.router.add_route("*", "/v1/{tail:.*}", _echo)
    return app


async def _list(request: web.Request) -> web.Response:
    return web.json_response(orjson.loads(await request.read() or b"[]"))


@asynccontextmanager
async def running_backend() -> AsyncIterator[str]:
    runner = web.AppRunner(create_app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()
