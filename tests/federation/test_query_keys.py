"""An MCP server whose API key the plan places in the query gets it on every request the gateway makes: opening
(server/discover, initialize and its notification), calls, the session's GET stream, messages of an HTTP+SSE
session and the DELETE that ends a session. The finding: only calls carried it, so such a server refused to open."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from apimcp.backends.base import ToolAnswer
from apimcp.backends.credentials import ApiKey
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import McpBinding, Operation, ServerTemplate, Service
from apimcp.federation.backend import McpBackend
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio
KEY = "plan-secret"
OPERATION = Operation("echo", {"type": "object"}, McpBinding("echo"))


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    session = new_session()
    yield session
    await close_session(session)


def _rpc(request_id: object, result: object) -> web.Response:
    return web.json_response({"jsonrpc": "2.0", "id": request_id, "result": result}, headers={"Mcp-Session-Id": "s1"})


def streamable(heard: list[tuple[str, str, str | None]], stateless: bool) -> web.Application:
    """A Streamable HTTP server that refuses (401) any request without the key in its query, and notes each."""

    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.method == "POST" else {}
        what = str(body.get("method", request.method))
        heard.append((request.method, what, request.query.get("key")))
        if request.query.get("key") != KEY:
            return web.Response(status=401)
        if request.method == "GET":  # the session's stream: open, telling nothing
            stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await stream.prepare(request)
            await asyncio.sleep(0.5)
            return stream
        if request.method == "DELETE" or "id" not in body:
            return web.Response(status=202 if request.method == "POST" else 200)
        if what == "server/discover":
            if not stateless:
                return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601,
                                                                                         "message": "no"}})  # fmt: skip
            return _rpc(body["id"], {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}})
        if what == "initialize":
            return _rpc(body["id"], {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                     "serverInfo": {"name": "keyed", "version": "1"}})  # fmt: skip
        return _rpc(body["id"], {"content": [{"type": "text", "text": "ok"}]})

    app = web.Application()
    app.router.add_route("*", "/mcp", handle)
    return app


async def _called(http: aiohttp.ClientSession, url: str) -> object:
    service = Service("keyed", "1", (OPERATION,), servers=(ServerTemplate(url),), kind="mcp")
    backend = McpBackend(service, http, timeout_seconds=5, credentials=ApiKey("key", KEY, "query"))
    try:
        answered = await backend.call(OPERATION, {})
        await asyncio.sleep(0.2)  # the session's GET stream opens in the background
        return answered
    finally:
        await backend.close()


@pytest.mark.parametrize("stateless", [False, True], ids=["session", "stateless"])
async def test_every_request_to_a_streamable_http_server_carries_the_key(
    http: aiohttp.ClientSession, stateless: bool
) -> None:
    heard: list[tuple[str, str, str | None]] = []
    async with serving_here(streamable(heard, stateless)) as port:
        answered = await _called(http, f"http://127.0.0.1:{port}/mcp")
    assert isinstance(answered, ToolAnswer), answered
    assert {key for _, _, key in heard} == {KEY}, heard
    asked = [what for _, what, _ in heard]
    if stateless:
        assert asked == ["server/discover", "tools/call"]
    else:
        assert asked[:4] == ["server/discover", "initialize", "notifications/initialized", "tools/call"]
        assert {"GET", "DELETE"} <= set(asked[4:]), asked  # the session's stream, and its end


async def test_an_http_sse_session_s_stream_and_messages_carry_the_key(http: aiohttp.ClientSession) -> None:
    heard: list[tuple[str, str, str | None]] = []
    queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    async def sse(request: web.Request) -> web.StreamResponse:
        heard.append(("GET", "stream", request.query.get("key")))
        if request.query.get("key") != KEY:
            return web.Response(status=401)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        await stream.write(b"event: endpoint\ndata: /messages?sessionId=1\n\n")
        while True:
            answer = await queue.get()
            await stream.write(f"event: message\ndata: {json.dumps(answer)}\n\n".encode())

    async def messages(request: web.Request) -> web.Response:
        body = await request.json()
        heard.append(("POST", str(body.get("method")), request.query.get("key")))
        if request.query.get("key") != KEY or request.query.get("sessionId") != "1":
            return web.Response(status=401)
        if body.get("method") == "initialize":
            result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "old", "version": "1"}}  # fmt: skip
            await queue.put({"jsonrpc": "2.0", "id": body["id"], "result": result})
        elif "id" in body:
            await queue.put({"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text",
                                                                                          "text": "ok"}]}})  # fmt: skip
        return web.Response(status=202)

    async def no_post(request: web.Request) -> web.Response:
        heard.append(("POST", "probe", request.query.get("key")))
        return web.Response(status=405)

    app = web.Application()
    app.router.add_get("/sse", sse)
    app.router.add_post("/sse", no_post)
    app.router.add_post("/messages", messages)
    async with serving_here(app) as port:
        answered = await _called(http, f"http://127.0.0.1:{port}/sse")
    assert isinstance(answered, ToolAnswer), answered
    assert {key for _, _, key in heard} == {KEY}, heard
    assert [what for _, what, _ in heard if what not in ("probe", "stream")] == [
        "initialize", "notifications/initialized", "tools/call"
    ]  # fmt: skip
