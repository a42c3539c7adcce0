"""A fake gateway for the sandbox tests: tools whose behaviour their names say."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from apimcp.artifacts.scripting import Script, ScriptRunner, ToolRef
from apimcp.protocol.context import InputRequired
from apimcp.protocol.errors import INVALID_PARAMS, McpError, UrlElicitationRequired
from apimcp.protocol.models import CallToolResult, RawJson, TextContent, elicitation_url

RAW_ROWS = b'{"rows":[' + b",".join(b'{"id":%d}' % n for n in range(20000)) + b"]}"
"""What the `raw` tool answers, as structured content already serialized (a large answer's)."""


def script(source: str, *tools: str | tuple[str, str], name: str = "probe") -> Script:
    """A script allowed to call `tools` (a name, or (service, name) for another service)."""
    entries = [{"tool": t} if isinstance(t, str) else {"service": t[0], "tool": t[1]} for t in tools]
    return Script.from_spec(name, {"script": source, "tools": entries})


def program(source: str) -> Script:
    """A code-mode program: it may call any tool the `Invoke` finds."""
    return Script("execute_code", source, None, kind="program", label="The program")


def text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


class Tools:
    """An `Invoke` that records each call; `sleep` waits `args.s` seconds and notes cancellation; `hold` waits
    until `let_go` is set."""

    def __init__(self) -> None:
        self.calls: list[tuple[ToolRef, dict[str, Any], int]] = []
        self.cancelled = 0
        self.let_go = asyncio.Event()
        self.scripts: dict[str, Script] = {}
        self.runner: ScriptRunner | None = None

    async def __call__(self, ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
        self.calls.append((ref, dict(arguments), depth))
        if ref.tool in self.scripts:  # a scripted tool, run one level deeper as the gateway would
            assert self.runner is not None
            return await self.runner.run(self.scripts[ref.tool], arguments, self, depth)
        if ref.tool == "echo":
            return CallToolResult(content=(TextContent(text="{}"),), structured_content={"got": dict(arguments)})
        if ref.tool == "raw":
            return CallToolResult(
                content=(TextContent(text=RAW_ROWS.decode()),), structured_content=RawJson(data=RAW_ROWS)
            )
        if ref.tool == "json_text":
            return CallToolResult(content=(TextContent(text='[1, "two"]'),))
        if ref.tool == "plain_text":
            return CallToolResult(content=(TextContent(text="just words"),))
        if ref.tool == "error_result":
            return CallToolResult(content=(TextContent(text='{"reason": "nope"}'),), is_error=True)
        if ref.tool == "invalid":
            raise McpError(INVALID_PARAMS, "login is required")
        if ref.tool == "crash":
            raise RuntimeError("secret internal detail")
        if ref.tool == "needs_credential":  # a per-user credential in a session: the client must act first
            raise UrlElicitationRequired([{"elicitationId": "e1", "url": "https://x.test/e1", "message": "key?"}])
        if ref.tool == "needs_input":  # the same in 2026-07-28
            raise InputRequired({"credential k": elicitation_url("key?", "https://x.test/e1", "e1")})
        if ref.tool == "hold":
            await self.let_go.wait()
            return CallToolResult(content=(TextContent(text="let go"),))
        if ref.tool == "sleep":
            try:
                await asyncio.sleep(float(arguments.get("s", 0.05)))
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return CallToolResult(content=(TextContent(text="slept"),))
        raise McpError(INVALID_PARAMS, f"Unknown tool: {ref.tool}")


async def until_called(tools: Tools, count: int, within: float = 10.0) -> None:
    """Until `count` tool calls were made; fails past `within` seconds."""
    start = time.monotonic()
    while len(tools.calls) < count:
        # timing-ok: a guard against a hang, far above the milliseconds a call takes to start
        assert time.monotonic() - start < within, f"{len(tools.calls)} tool calls after {within} s, not {count}"
        await asyncio.sleep(0.005)


async def until_idle(runner: ScriptRunner, within: float) -> float:
    """Seconds until no worker runs a script; fails past `within`."""
    start = time.monotonic()
    while runner.running:
        assert time.monotonic() - start < within, f"a worker still runs a script after {within} s"  # timing-ok: a guard
        await asyncio.sleep(0.005)
    return time.monotonic() - start
