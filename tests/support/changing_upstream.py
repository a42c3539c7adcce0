"""An MCP server whose tool list a test rewrites (pinned definitions: a "rug pull"), served by the engine on
loopback."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from apimcp.protocol import (
    CallToolResult,
    EndpointOptions,
    McpEndpoint,
    McpHandler,
    Page,
    RequestContext,
    ServerFeatures,
    TextContent,
    Tool,
)
from tests.support.live_server import live_server

OBJECT = {"type": "object"}


class ChangingTools(McpHandler):
    """An upstream whose tool list the test rewrites."""

    features = ServerFeatures(tools=True, tools_list_changed=True)

    def __init__(self) -> None:
        self.tools = [
            Tool(name="weather", description="Tells the weather.", input_schema=OBJECT),
            Tool(name="sum", description="Adds numbers.", input_schema=OBJECT),
        ]

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        return Page(items=tuple(self.tools))

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        return CallToolResult(content=(TextContent(text=f"{name} called"),))


@contextmanager
def changing_upstream() -> Iterator[tuple[ChangingTools, str]]:
    """A `ChangingTools` server on loopback, and its MCP URL."""
    with changing_endpoint() as (upstream, _, url):
        yield upstream, url


@contextmanager
def changing_endpoint(options: EndpointOptions | None = None) -> Iterator[tuple[ChangingTools, McpEndpoint, str]]:
    """A `ChangingTools` server on loopback, its endpoint (to tell its sessions what changed), and its MCP URL."""
    upstream = ChangingTools()
    endpoint = McpEndpoint(upstream, options)
    with live_server(endpoint, endpoint.shutdown) as base:
        yield upstream, endpoint, base.replace("//localhost:", "//127.0.0.1:") + "/mcp"
