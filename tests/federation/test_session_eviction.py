"""Past its bound of sessions per server, the gateway lets the least recently used go and ends it at the server
(DELETE), as it ends the others when it stops. The finding: an evicted session was only forgotten, so a server
kept up to one session per user the gateway had ever called it for."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from apimcp.backends.rest import close_session, new_session
from apimcp.federation.sessions import UpstreamSessions
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio


async def test_a_session_let_go_past_the_bound_is_ended_at_the_server() -> None:
    opened: list[str] = []
    deleted: list[str] = []

    async def post(request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("method") == "server/discover":
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if body.get("method") == "initialize":
            session = f"s{len(opened) + 1}"
            opened.append(session)
            result = {"protocolVersion": "2025-06-18", "capabilities": {},
                      "serverInfo": {"name": "many", "version": "1"}}  # fmt: skip
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result},
                                     headers={"Mcp-Session-Id": session})  # fmt: skip
        return web.Response(status=202)

    async def delete(request: web.Request) -> web.Response:
        deleted.append(request.headers["Mcp-Session-Id"])
        return web.Response(status=200)

    async def no_stream(_: web.Request) -> web.Response:
        return web.Response(status=405)

    app = web.Application()
    app.router.add_post("/mcp", post)
    app.router.add_delete("/mcp", delete)
    app.router.add_get("/mcp", no_stream)
    http = new_session()
    try:
        async with serving_here(app) as port:
            sessions = UpstreamSessions(http, f"http://127.0.0.1:{port}/mcp", timeout=aiohttp.ClientTimeout(total=5),
                                        max_sessions=2)  # fmt: skip
            for user in ("ann", "bob", "cid"):
                await sessions.era(user, {"Authorization": f"Bearer {user}"})
            await sessions.era("bob", {"Authorization": "Bearer bob"})  # kept: no new session
            assert opened == ["s1", "s2", "s3"]
            await sessions.close()
    finally:
        await close_session(http)
    assert deleted[0] == "s1"  # ann's, let go when cid's opened, ended then
    assert sorted(deleted) == ["s1", "s2", "s3"]
