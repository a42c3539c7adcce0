"""MCP servers for the gateway to front (federation tests): the official SDK's server, which speaks 2026-07-28,
and this project's engine serving one era only (a session-era server of any revision, or a stateless one)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from starlette.types import Message, Receive, Scope, Send

from apimcp.protocol import EndpointOptions, McpEndpoint
from apimcp.protocol.sessions import MemorySessionStore
from tests.protocol.showcase import Showcase
from tests.support.idp import NODE, TOOLS
from tests.support.live_server import live_app, live_server
from tests.support.processes import free_port


class SeenHeaders:
    """What the last requests to an upstream carried in `Authorization` (credentials must arrive, and the
    client's own token must not)."""

    def __init__(self) -> None:
        self.authorization: list[str | None] = []
        self.tool_calls: list[str | None] = []
        """`Authorization` of the requests calling a tool only (a control plane reading the server's tools, or a
        gateway probing its health, sends requests of its own)."""


def sdk_server() -> MCPServer:
    server = MCPServer("notes", instructions="Notes kept for the tests.")

    @server.tool(title="Add two numbers")
    def add(a: int, b: int) -> int:
        """Add two integers and give their sum."""
        return a + b

    @server.tool(annotations={"readOnlyHint": True})  # type: ignore[arg-type]
    def find_note(topic: str) -> dict[str, Any]:
        """Find the note about a topic."""
        return {"topic": topic, "text": f"all about {topic}"}

    @server.tool()
    async def count_slowly(upto: int, ctx: Context) -> str:
        """Count to a number, telling progress."""
        for step in range(1, upto + 1):
            await ctx.report_progress(step, upto, f"at {step}")
        return f"counted to {upto}"

    @server.tool()
    def broken() -> str:
        """Always fails."""
        raise ValueError("the notes are on fire")

    return server


class _Recording:
    def __init__(self, app: Any, seen: SeenHeaders) -> None:
        self._app = app
        self._seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization")
            authorization = value.decode() if value is not None else None
            self._seen.authorization.append(authorization)

            async def reading() -> Message:
                message = await receive()
                if message["type"] == "http.request" and b'"tools/call"' in message.get("body", b""):
                    self._seen.tool_calls.append(authorization)
                return message

            await self._app(scope, reading, send)
            return
        await self._app(scope, receive, send)


@contextlib.contextmanager
def sdk_upstream(seen: SeenHeaders | None = None) -> Iterator[str]:
    """The SDK's server on loopback: its MCP URL."""
    server = sdk_server()

    @contextlib.asynccontextmanager
    async def make() -> AsyncIterator[Any]:
        app = server.streamable_http_app()
        async with server.session_manager.run():
            yield _Recording(app, seen) if seen is not None else app

    with live_app(make) as base:
        yield f"{base.replace('//localhost:', '//127.0.0.1:')}/mcp"


@dataclass
class ShowcaseUpstream:
    url: str
    store: MemorySessionStore
    handler: Showcase


@contextlib.contextmanager
def showcase_upstream(*, session_era: bool) -> Iterator[ShowcaseUpstream]:
    """The project's showcase handler served in one era only: its MCP URL, session store and handler."""
    store = MemorySessionStore()
    options = EndpointOptions(session_era=session_era, stateless_era=not session_era, sessions=store)
    handler = Showcase()
    endpoint = McpEndpoint(handler, options)
    with live_server(endpoint, endpoint.shutdown) as base:
        yield ShowcaseUpstream(f"{base.replace('//localhost:', '//127.0.0.1:')}/mcp", store, handler)


@contextlib.contextmanager
def everything_upstream() -> Iterator[str]:
    """The official reference server, `@modelcontextprotocol/server-everything` (npm), over Streamable HTTP: its
    MCP URL. It is started on a free port and stopped with the block."""
    entry = TOOLS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    port = free_port()
    with _serving([str(NODE), str(entry), "streamableHttp"], port, {"PORT": str(port)}, "the reference server"):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def _serving(command: list[str], port: int, env: dict[str, str], what: str) -> Iterator[None]:
    """`command` running until the block ends, once it accepts connections on `port` (30 s at most)."""
    process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{what} did not start") from None
                time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


ROOT = Path(__file__).resolve().parents[2]
OLD_SDK_SERVER = Path(__file__).with_name("sdk1_server.py")


@contextlib.contextmanager
def old_sdk_upstream(version: str, transport: str = "streamable-http", mark: Path | None = None) -> Iterator[str]:
    """A server of the official Python SDK at `version` (1.8.1, 1.10.1, or "1" for the last 1.x), run by that
    release's venv (scripts/setup.sh --test): its URL (`/mcp`, or `/sse` for the HTTP+SSE transport). Its `wait`
    tool writes to `mark` when it is cancelled."""
    venv = ROOT / (".venv-mcp1" if version == "1" else f".venv-mcp-{version}")
    port = free_port()
    command = [str(venv / "bin" / "python"), str(OLD_SDK_SERVER), str(port), transport]
    env = {"APIMCP_TEST_MARK": str(mark)} if mark is not None else {}
    with _serving(command, port, env, f"the mcp {version} server"):
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'streamable-http' else 'sse'}"
