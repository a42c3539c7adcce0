"""The servers the protocol benchmark compares, each serving one trivial tool.

- `raw_echo`: a bare ASGI app that parses the JSON-RPC body and answers a fixed
  tool result: the practical limit of any Python MCP server on this stack.
- `engine`: apimcp's protocol engine (both eras on one endpoint).
- `sdk`: the official `mcp` SDK's low-level server (it routes 2026-07-28 requests
  to its stateless handler and the others to sessions, like the engine).

Run one with uvicorn, e.g. ``uvicorn bench.apps:engine --loop uvloop --http httptools``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from apimcp.protocol import (
    CallToolResult,
    Implementation,
    McpEndpoint,
    McpHandler,
    Page,
    RequestContext,
    ServerFeatures,
    TextContent,
    Tool,
    TransportSecurity,
    invalid_params,
)
from apimcp.protocol.options import EndpointOptions
from bench.proxy_app import read_body

TOOL_NAME = "greet"
TOOL_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


# --- the practical limit -----------------------------------------------------------------------


async def raw_echo(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    request = orjson.loads(await read_body(receive))
    name = request["params"]["arguments"]["name"]
    response = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"content": [{"type": "text", "text": f"Hello, {name}!"}], "isError": False},
        }
    )
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(response)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": response})


# --- apimcp's engine ---------------------------------------------------------------------------


class Greeter(McpHandler):
    server_info = Implementation(name="bench", version="1")
    features = ServerFeatures(tools=True, logging=False)
    tools = (Tool(name=TOOL_NAME, input_schema=TOOL_SCHEMA, description="Say hello"),)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        return Page(items=self.tools)

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        if name != TOOL_NAME:
            raise invalid_params(f"Unknown tool: {name}")
        return CallToolResult(content=(TextContent(text=f"Hello, {arguments.get('name')}!"),))


engine = McpEndpoint(Greeter(), EndpointOptions(security=TransportSecurity()))


# --- the official SDK's low-level server --------------------------------------------------------


async def _sdk_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name=TOOL_NAME, description="Say hello", input_schema=TOOL_SCHEMA)])


async def _sdk_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = (params.arguments or {}).get("name")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"Hello, {name}!")])


def _sdk_app() -> Any:
    server = Server("bench", version="1", on_list_tools=_sdk_list_tools, on_call_tool=_sdk_call_tool)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
    )
    return server.streamable_http_app(json_response=True, transport_security=security)


sdk = _sdk_app()


engine_session_only = McpEndpoint(Greeter(), EndpointOptions(security=TransportSecurity(), stateless_era=False))
"""The same server speaking the session era only (2024-11-05 ... 2025-11-25): an upstream the gateway holds a
session with (bench/federation_bench.py)."""
