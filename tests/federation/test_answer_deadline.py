"""A session-era MCP server that asks the user during a call: the plan's timeout counts the server's time, not the
time the user takes to answer. The finding: a user slower than the timeout failed the call, and their late answer
was still relayed to a server whose call the client had been told failed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from apimcp.backends.base import CallClient, CallExtras, Failure, ToolAnswer
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import McpBinding, Operation, ServerTemplate, Service
from apimcp.federation.backend import McpBackend
from apimcp.protocol.models import InputRequest
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio
OPERATION = Operation("confirm", {"type": "object"}, McpBinding("confirm"))
TIMEOUT = 0.6


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    session = new_session()
    yield session
    await close_session(session)


class Asking:
    """A 2025-06-18 server whose tool asks the user (elicitation on the call's stream), then answers after
    `then_seconds` of its own."""

    def __init__(self, then_seconds: float) -> None:
        self.then_seconds = then_seconds
        self.replies: list[Mapping[str, Any]] = []
        self._replied = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        method = body.get("method")
        if method == "server/discover":
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "asking", "version": "1"}}  # fmt: skip
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result},
                                     headers={"Mcp-Session-Id": "s1"})  # fmt: skip
        if method is None and "id" in body:  # the client's answer, relayed
            self.replies.append(body)
            self._replied.set()
            return web.Response(status=202)
        if "id" not in body:
            return web.Response(status=202)
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        ask = {"jsonrpc": "2.0", "id": 7, "method": "elicitation/create",
               "params": {"message": "Go on?", "requestedSchema": {"type": "object", "properties": {}}}}  # fmt: skip
        await stream.write(f"event: message\ndata: {json.dumps(ask)}\n\n".encode())
        await self._replied.wait()
        await asyncio.sleep(self.then_seconds)
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": "done"}]}}
        await stream.write(f"event: message\ndata: {json.dumps(answer)}\n\n".encode())
        return stream


async def _call(http: aiohttp.ClientSession, server: Asking, think_seconds: float) -> object:
    async def ask(requests: Mapping[str, InputRequest]) -> dict[str, Any]:
        await asyncio.sleep(think_seconds)  # the person reads and decides
        return {key: {"action": "accept", "content": {}} for key in requests}

    async def log(*_: object) -> None:
        return None

    async def refused(_: web.Request) -> web.Response:
        return web.Response(status=405)

    app = web.Application()
    app.router.add_post("/mcp", server.handle)
    app.router.add_route("*", "/mcp", refused)  # no GET stream, no DELETE
    async with serving_here(app) as port:
        service = Service("asking", "1", (OPERATION,), servers=(ServerTemplate(f"http://127.0.0.1:{port}/mcp"),),
                          kind="mcp")  # fmt: skip
        backend = McpBackend(service, http, timeout_seconds=TIMEOUT)
        client = CallClient(ask, {"elicitation": {}}, log)
        try:
            return await backend.call(OPERATION, {}, extras=CallExtras(client=client))
        finally:
            await backend.close()


async def test_a_user_slower_than_the_plan_s_timeout_still_gets_the_call_done(http: aiohttp.ClientSession) -> None:
    server = Asking(then_seconds=0.1)
    answered = await _call(http, server, think_seconds=3 * TIMEOUT)
    assert isinstance(answered, ToolAnswer), answered
    assert [reply["result"] for reply in server.replies] == [{"action": "accept", "content": {}}]


async def test_the_server_s_own_time_is_still_bounded(http: aiohttp.ClientSession) -> None:
    """The clock goes on with what was left once the answer is relayed: a server that then stalls fails the call."""
    server = Asking(then_seconds=5)
    answered = await _call(http, server, think_seconds=0.1)
    assert isinstance(answered, Failure)
    assert "0.6 s" in answered.message, answered.message
    assert len(server.replies) == 1
