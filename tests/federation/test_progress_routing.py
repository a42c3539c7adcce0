"""An upstream's progress reaches only the call it is about: what arrives on a call's own stream is about that
call, and a progress token is never one another caller could guess."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from apimcp.backends.base import CallExtras
from apimcp.backends.credentials import Placement
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import McpBinding, Operation, ServerTemplate, Service
from apimcp.federation.backend import McpBackend
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio

WORK = Operation("work", {"type": "object"}, McpBinding("work"))
SEND = Operation("send", {"type": "object"}, McpBinding("send"))


class Upstream:
    """A session-era server: `work` reports its progress slowly; `send` sends progress for the tokens its caller
    names, on the call's stream or on the session's GET stream (a tool that lets its caller choose, or a server
    that misbehaves)."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.tokened = asyncio.Event()
        """Set when a call with a progress token arrives."""
        self.streams: dict[str, web.StreamResponse] = {}
        self._sessions = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/mcp", self.post)
        app.router.add_get("/mcp", self.get)
        app.router.add_delete("/mcp", self.delete)
        return app

    async def delete(self, request: web.Request) -> web.Response:
        return web.Response()

    async def post(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if "id" not in body:
            return web.Response(status=202)
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": body["id"], "result": {}}
        if body["method"] == "initialize":
            answer["result"] = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "upstream", "version": "1"}}  # fmt: skip
            return web.json_response(answer, headers={"Mcp-Session-Id": f"s{next(self._sessions)}"})
        if body["method"] != "tools/call":
            return web.json_response(answer)
        params = body["params"]
        token, arguments = params.get("_meta", {}).get("progressToken", ""), params["arguments"]
        self.tokens.append(token)
        if token:
            self.tokened.set()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if params["name"] == "work":
            for step in range(1, 4 if token else 1):
                await asyncio.sleep(0.1)
                await response.write(_event(_progress(token, step, "work")))
        else:
            out = response if arguments["on"] == "call" else self.streams[request.headers["Mcp-Session-Id"]]
            for named in arguments["tokens"]:
                await out.write(_event(_progress(named, 99, "sent")))
        answer["result"] = {"content": [{"type": "text", "text": "done"}]}
        await response.write(_event(answer))
        return response

    async def get(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.streams[request.headers["Mcp-Session-Id"]] = response
        await asyncio.sleep(30)
        return response


def _progress(token: str, step: int, note: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": step, "message": note}}  # fmt: skip


def _event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + orjson.dumps(message) + b"\n\n"


def _user(name: str) -> CallExtras:
    return CallExtras(credentials=Placement(headers={"Authorization": f"Bearer {name}"}))


def _heard(into: list[str]) -> Callable[[float, float | None, str | None], Awaitable[None]]:
    async def progress(done: float, total: float | None, note: str | None) -> None:
        into.append(str(note))

    return progress


@pytest.mark.parametrize("on", ["call", "session"])
async def test_progress_sent_for_another_caller_s_call_never_reaches_it(on: str) -> None:
    """The finding: the gateway routed any progress it heard by its token alone, from any stream, and the tokens
    counted up from 100: a call of one user's could send progress into another user's call."""
    upstream = Upstream()
    http = new_session()
    try:
        async with serving_here(upstream.app()) as port:
            service = Service("up", "1", (WORK, SEND), servers=(ServerTemplate(f"http://127.0.0.1:{port}/mcp"),),
                              kind="mcp")  # fmt: skip
            backend = McpBackend(service, http, timeout_seconds=5)
            for name in ("ann", "bob"):  # each user's session open, with its GET stream
                await backend.call(WORK, {}, None, _user(name))
            for _ in range(50):
                if len(upstream.streams) == 2:
                    break
                await asyncio.sleep(0.05)
            ann_heard: list[str] = []
            ann = asyncio.create_task(backend.call(WORK, {}, _heard(ann_heard), _user("ann")))
            await asyncio.wait_for(upstream.tokened.wait(), 5)
            known = upstream.tokens[-1] if on == "call" else ""  # a stream of bob's call can only name it
            guesses = [f"apimcp-{n}" for n in range(90, 200)]
            await backend.call(SEND, {"on": on, "tokens": [known, *guesses]}, _heard([]), _user("bob"))
            await ann
            await backend.close()
    finally:
        await close_session(http)
    assert ann_heard == ["work", "work", "work"]
    sent = [token for token in upstream.tokens if token]
    assert len(sent) == 2 and len(set(sent)) == 2
