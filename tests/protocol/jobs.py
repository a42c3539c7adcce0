"""A handler whose tools run as tasks in every way the engine allows: answered directly when quick, a task
after a while, required, waiting for input, failing; it notes the calls that were cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from apimcp.protocol import CallToolResult, McpHandler, Page, RequestContext, ServerFeatures, TextContent, Tool
from apimcp.protocol.errors import McpError
from apimcp.protocol.models import elicitation_form
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.tasks.records import TASKS_EXTENSION

WITH_TASKS = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
POLICIES = {
    "quick": TaskPolicy("optional", 0.5),
    "sleepy": TaskPolicy("optional", 0.1),
    "strict": TaskPolicy("required", 0.5),
    "ask": TaskPolicy("optional", 0.0),
    "pair": TaskPolicy("optional", 0.0),
    "boom": TaskPolicy("optional", 0.0),
}


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=text),))


class Jobs(McpHandler):
    features = ServerFeatures(tools=True, tasks=True)

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def task_policy(self, name: str) -> TaskPolicy | None:
        return POLICIES.get(name)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        names = [*POLICIES, "plain"]
        return Page(items=[Tool(name=n, input_schema={"type": "object"}) for n in names])

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        if name in ("quick", "plain", "strict"):
            return _text(f"{name} done")
        if name == "sleepy":
            try:
                await asyncio.sleep(float(arguments.get("seconds", 30)))
            except asyncio.CancelledError:
                self.cancelled.append(str(arguments.get("label")))
                raise
            return _text(f"slept {arguments.get('seconds')}")
        if name == "ask":
            answer = await ctx.elicit("Your name?", FORM, key="name")
            return _text(f"Hello {answer['content']['name']}")
        if name == "pair":
            got = await ctx.request_inputs(
                {"one": elicitation_form("One?", FORM), "two": elicitation_form("Two?", FORM)}
            )
            return _text(f"{got['one']['content']['name']}+{got['two']['content']['name']}")
        if name == "boom":
            raise McpError(-32603, "it broke")
        raise McpError(-32602, f"Unknown tool: {name}")
