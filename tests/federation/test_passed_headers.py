"""A client's own headers that the header policy passes on to an MCP server (an API key renamed, say) give that
client an upstream session of its own: a server that ties a session to the key it was opened with must never
answer one client's call in another's session."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.gateway.conftest import gateway_of
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp


def _upstream(opened_with: dict[str, str | None]) -> web.Application:
    """A 2025-06-18 server whose session belongs to the key it was opened with; `whoami` names that key."""
    sessions = itertools.count(1)

    def rpc(request_id: object, result: object) -> dict[str, object]:
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def post(request: web.Request) -> web.Response:
        body = await request.json()
        method, key = body.get("method"), request.headers.get("X-Upstream-Token")
        if method == "server/discover":
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if method == "initialize":
            session = f"s{next(sessions)}"
            opened_with[session] = key
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "keyed", "version": "1"}}  # fmt: skip
            return web.json_response(rpc(body["id"], result), headers={"Mcp-Session-Id": session})
        if "id" not in body:
            return web.Response(status=202)
        if method == "tools/list":
            return web.json_response(
                rpc(body["id"], {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]})
            )
        owner = opened_with.get(request.headers.get("Mcp-Session-Id", ""))
        return web.json_response(rpc(body["id"], {"content": [{"type": "text", "text": f"you are {owner}"}]}))

    async def no_stream(request: web.Request) -> web.Response:
        return web.Response(status=405)

    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_get("/mcp", no_stream)
    app.router.add_delete("/mcp", no_stream)
    return app


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    opened_with: dict[str, str | None] = {}
    with live_aiohttp(lambda: _upstream(opened_with)) as upstream:
        config = f"""
services:
  keyed:
    mcp: {upstream}/mcp
    header_policy: {{rename: {{x-user-key: X-Upstream-Token}}}}
expositions:
  keyed: {{services: [keyed]}}
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("passed")
        with live_app(lambda: gateway_of(config, folder)) as served:
            yield served


def test_each_client_s_passed_key_has_a_session_of_its_own(gateway: str) -> None:
    with McpHttp(f"{gateway}/mcp/keyed") as mcp:
        for key in ("alice-key", "bob-key", "alice-key"):
            reply = mcp.modern("tools/call", {"name": "whoami", "arguments": {}}, headers={"x-user-key": key})
            assert reply.status == 200, reply
            assert reply.result["content"][0]["text"] == f"you are {key}"
