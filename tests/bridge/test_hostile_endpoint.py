"""The stdio bridge against an endpoint that answers oddly: every request of the client's still gets an answer,
and nothing it holds grows without bound."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp import web

from apimcp.bridge.bridge import StdioBridge
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio
LARGE = "x" * 300_000


async def _answer(request: web.Request) -> web.StreamResponse:
    message = await request.json()
    name = message.get("params", {}).get("name")
    if name == "large":  # a JSON body that arrives in several pieces
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        body = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"text": LARGE}})
        for at in range(0, len(body), 65536):
            await response.write(body[at : at + 65536])
            await asyncio.sleep(0.01)
        await response.write_eof()
        return response
    if name == "true":  # `true` for the id 1: equal in Python, not in JSON-RPC
        return web.json_response({"jsonrpc": "2.0", "id": True, "result": {}})
    if name == "open":  # the answer, and the stream left open after it
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        answer = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"open": True}})
        await response.write(b"event: message\ndata: " + answer + b"\n\n")
        await asyncio.sleep(3600)
    return web.json_response({"jsonrpc": "2.0", "id": message.get("id"), "result": {"headers": dict(request.headers)}})


async def _bridged(url: str, lines: list[dict[str, Any]]) -> list[Any]:
    written: list[Any] = []

    async def write(line: bytes) -> None:
        written.append(orjson.loads(line))

    reader = asyncio.StreamReader()
    for line in lines:
        reader.feed_data(orjson.dumps(line) + b"\n")
    reader.feed_eof()
    async with asyncio.timeout(20):  # what was left running would be waited for 30 s
        await StdioBridge(url, {}, write).run(reader)
    return written


def _call(number: int, name: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": name, **params}}


async def test_every_request_gets_its_answer_or_an_error_for_it() -> None:
    """The findings: a JSON answer that came in pieces was read in one partial read (an error for a good answer);
    a response whose id was `true` passed for the answer to request 1 (which then never got one); a line break in
    a value the bridge puts in a header killed the request's task unanswered; an answer whose stream stayed open
    held the request's slot (and the bridge's end) for ever."""
    app = web.Application()
    app.router.add_post("/mcp", _answer)
    async with serving_here(app) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28\r\nX-Evil: 1"}
        written = await _bridged(url, [_call(1, "large"), _call(2, "true"), _call(3, "echo", _meta=meta),
                                       _call(4, "open")])  # fmt: skip
    by_id = {message["id"]: message for message in written if message.get("id") is not True}
    assert by_id[1]["result"]["text"] == LARGE
    assert "without a response" in by_id[2]["error"]["message"]
    assert by_id[3]["result"]["headers"]["MCP-Protocol-Version"].startswith("=?base64?")  # carried, not split
    assert "X-Evil" not in by_id[3]["result"]["headers"]
    assert by_id[4]["result"] == {"open": True}
