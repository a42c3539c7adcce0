"""The stdio bridge against a server that answers initialize as an SSE stream (a notification, then the response)
with its session id in the stream's headers, as Streamable HTTP servers may: the bridge passes every event on,
learns the session from that response, and sends the id and the negotiated version on everything after (POSTs, the
GET stream, the DELETE at the end). The server refuses any request without the session, so the test fails if the
bridge forgets it."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import pytest
from aiohttp import web

from tests.support.live_aiohttp import live_aiohttp

SESSION = "sse-session-7f3a"
VERSION = "2025-11-25"


@dataclass
class Seen:
    """What the server was sent: method (HTTP, and JSON-RPC for POSTs) with the session headers."""

    requests: list[tuple[str, str | None, str | None, str | None]] = field(default_factory=list)


def _event(message: dict[str, Any], event_id: str) -> bytes:
    return f"id: {event_id}\ndata: {json.dumps(message)}\n\n".encode()


def _server(seen: Seen) -> web.Application:
    async def mcp(request: web.Request) -> web.StreamResponse:
        session = request.headers.get("Mcp-Session-Id")
        version = request.headers.get("MCP-Protocol-Version")
        if request.method != "POST":
            seen.requests.append((request.method, None, session, version))
            return web.Response(status=405 if request.method == "GET" else 200)
        message = await request.json()
        seen.requests.append(("POST", message.get("method"), session, version))
        if message.get("method") == "initialize":
            stream = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Mcp-Session-Id": SESSION})
            await stream.prepare(request)
            await stream.write(b"id: e0\ndata:\n\n")  # a priming event, no message
            log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
            await stream.write(_event(log, "e1"))
            result = {
                "protocolVersion": VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse-initialize", "version": "1"},
            }
            await stream.write(_event({"jsonrpc": "2.0", "id": message["id"], "result": result}, "e2"))
            await stream.write_eof()
            return stream
        if session != SESSION:
            error = {"code": -32600, "message": "no session"}
            return web.json_response({"jsonrpc": "2.0", "id": message.get("id"), "error": error}, status=400)
        if "id" not in message:
            return web.Response(status=202)
        tools = [{"name": "only_with_a_session", "inputSchema": {"type": "object"}}]
        return web.json_response({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}})

    app = web.Application()
    app.router.add_route("*", "/mcp", mcp)
    return app


@pytest.fixture
def served() -> Iterator[tuple[str, Seen]]:
    seen = Seen()
    with live_aiohttp(lambda: _server(seen)) as base:
        yield f"{base}/mcp", seen


def _lines(stream: IO[bytes]) -> queue.Queue[Any]:
    found: queue.Queue[Any] = queue.Queue()

    def read() -> None:
        for line in stream:
            found.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()
    return found


def test_a_session_answered_over_sse_is_used_after(served: tuple[str, Seen]) -> None:
    url, seen = served
    bridge = subprocess.Popen(
        [sys.executable, "-m", "apimcp.cli", "stdio", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert bridge.stdin is not None and bridge.stdout is not None
    try:
        answers = _lines(bridge.stdout)

        def send(message: dict[str, Any]) -> None:
            assert bridge.stdin is not None
            bridge.stdin.write(json.dumps(message).encode() + b"\n")
            bridge.stdin.flush()

        params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert answers.get(timeout=20)["method"] == "notifications/message"  # every event passed on, in order
        initialized = answers.get(timeout=20)
        assert initialized["id"] == 1 and initialized["result"]["serverInfo"]["name"] == "sse-initialize"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed = answers.get(timeout=20)
        assert listed == {"jsonrpc": "2.0", "id": 2, "result": {"tools": listed["result"]["tools"]}}, listed
        assert listed["result"]["tools"][0]["name"] == "only_with_a_session"
        bridge.stdin.close()
        assert bridge.wait(timeout=20) == 0
    finally:
        if bridge.poll() is None:
            bridge.kill()
            bridge.wait()
        bridge.stdout.close()
        assert bridge.stderr is not None
        bridge.stderr.close()
    assert answers.empty()
    first, *after = seen.requests
    assert first == ("POST", "initialize", None, None)
    assert ("POST", "notifications/initialized", SESSION, VERSION) in after
    assert ("POST", "tools/list", SESSION, VERSION) in after
    assert ("GET", None, SESSION, VERSION) in after  # the session's GET stream (this server offers none: 405)
    assert after[-1] == ("DELETE", None, SESSION, VERSION)  # the session ended when the client closed stdin
    assert all(request[2] == SESSION for request in after)
