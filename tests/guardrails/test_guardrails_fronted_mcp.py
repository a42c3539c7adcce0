"""Guardrails on what an MCP server the gateway fronts sends besides its tool's text: progress messages during the
call, resource links, text files served as bytes (in a result, or read as a resource)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.server.mcpserver import Context, MCPServer

from apimcp.protocol import (
    CallToolResult,
    McpEndpoint,
    McpHandler,
    Page,
    RequestContext,
    ServerFeatures,
    TextContent,
    Tool,
)
from apimcp.protocol.options import EndpointOptions
from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app, live_server

pytestmark = pytest.mark.anyio
AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
MODES = ["legacy", "2026-07-28"]


class Asking(McpHandler):
    """A session-era server whose one tool asks the user, naming the key it is about to rotate."""

    features = ServerFeatures(tools=True)
    tools = (Tool(name="confirm_rotation", input_schema={"type": "object"}),)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        return Page(items=self.tools)

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        schema = {"type": "object", "properties": {"sure": {"type": "boolean"}}}
        answer = await ctx.elicit(f"Rotate the key {AWS}?", schema)
        return CallToolResult(content=(TextContent(text=f"answered: {answer.get('action')}"),))


def _leaky() -> MCPServer:
    server = MCPServer("leaky")

    @server.tool()
    async def slow_report(ctx: Context) -> str:
        """Tells its progress, naming the key it uses."""
        await ctx.report_progress(1, 2, f"using key {AWS}")
        return "done"

    @server.tool()
    def report_link() -> types.CallToolResult:
        """Links a file whose URL carries a token."""
        link = types.ResourceLink(uri=f"https://files.example.com/r.csv?access_token={GHP}", name=f"report {GHP}")
        return types.CallToolResult(content=[link])

    @server.tool()
    def credentials_file() -> types.CallToolResult:
        """A text file, as bytes."""
        blob = base64.b64encode(f"aws_access_key_id={AWS}\n".encode()).decode()
        contents = types.BlobResourceContents(uri="file:///creds.txt", blob=blob, mimeType="text/plain")
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=contents)])

    @server.resource("notes://creds", mime_type="text/plain")
    def creds() -> bytes:
        return f"aws_access_key_id={AWS}\n".encode()

    return server


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    leaky = _leaky()

    @contextlib.asynccontextmanager
    async def upstream() -> AsyncIterator[Any]:
        app = leaky.streamable_http_app()
        async with leaky.session_manager.run():
            yield app

    asking = McpEndpoint(Asking(), EndpointOptions(session_era=True, stateless_era=False))
    with live_app(upstream) as served, live_server(asking, asking.shutdown) as asking_base:
        url = f"{served.replace('//localhost:', '//127.0.0.1:')}/mcp"
        asking_url = f"{asking_base.replace('//localhost:', '//127.0.0.1:')}/mcp"
        config = f"""
services:
  leaky: {{mcp: "{url}"}}
  asking: {{mcp: "{asking_url}"}}
expositions:
  blocked: {{services: [leaky], guardrails: [{{use: secrets, action: block}}]}}
  redacted: {{services: [leaky], guardrails: [{{use: secrets, action: redact}}]}}
  asking_blocked: {{services: [asking], guardrails: [{{use: secrets, action: block}}]}}
  asking_redacted: {{services: [asking], guardrails: [{{use: secrets, action: redact}}]}}
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path_factory.mktemp("gateway"))) as gateway:
            yield gateway


async def _call(url: str, mode: str, tool: str, heard: list[str | None] | None = None) -> types.CallToolResult:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        if heard is not None:
            heard.append(message)

    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, {}, progress_callback=progress)


@pytest.mark.parametrize("mode", MODES)
async def test_a_progress_message_is_withheld_or_redacted_as_the_answer_is(base: str, mode: str) -> None:
    """The finding: the answer was withheld, and the progress message sent during the call, naming the key, reached
    the client all the same."""
    heard: list[str | None] = []
    withheld = await _call(f"{base}/mcp/blocked", mode, "slow_report", heard)
    assert not withheld.is_error and heard == [None]  # the numbers go on, the message does not
    heard.clear()
    await _call(f"{base}/mcp/redacted", mode, "slow_report", heard)
    assert heard == ["using key [redacted:aws_access_key_id]"]


async def test_a_resource_link_s_address_and_name_are_searched(base: str) -> None:
    redacted = await _call(f"{base}/mcp/redacted", "2026-07-28", "report_link")
    (link,) = redacted.content
    assert isinstance(link, types.ResourceLink)
    assert (str(link.uri), link.name) == (
        "https://files.example.com/r.csv?access_token=[redacted:github_token]",
        "report [redacted:github_token]",
    )
    assert (await _call(f"{base}/mcp/blocked", "2026-07-28", "report_link")).is_error


async def test_a_text_file_served_as_bytes_is_searched_in_a_result_and_when_read(base: str) -> None:
    blocked = await _call(f"{base}/mcp/blocked", "2026-07-28", "credentials_file")
    assert blocked.is_error and AWS not in blocked.model_dump_json()
    redacted = await _call(f"{base}/mcp/redacted", "2026-07-28", "credentials_file")
    (block,) = redacted.content
    assert isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.BlobResourceContents)
    assert base64.b64decode(block.resource.blob).decode() == "aws_access_key_id=[redacted:aws_access_key_id]\n"
    async with Client(f"{base}/mcp/redacted", mode="2026-07-28") as client:  # type: ignore[arg-type]
        read = await client.read_resource("notes://creds")
    (contents,) = read.contents
    assert isinstance(contents, types.BlobResourceContents)
    assert AWS not in base64.b64decode(contents.blob).decode()


@pytest.mark.parametrize("mode", MODES)
async def test_what_a_server_asks_the_client_during_a_call_passes_the_guardrails_first(base: str, mode: str) -> None:
    """The finding (a suspicion of the review, confirmed here): an elicitation (or a sampling request) a fronted
    server sent during a call reached the client whatever the guardrails said of its text."""
    asked: list[str] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"sure": True})

    async with Client(f"{base}/mcp/asking_redacted", mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
        answered = await client.call_tool("confirm_rotation", {})
    assert asked == ["Rotate the key [redacted:aws_access_key_id]?"], answered.model_dump_json()
    assert "answered: accept" in answered.model_dump_json()
    asked.clear()
    async with Client(f"{base}/mcp/asking_blocked", mode=mode, elicitation_callback=elicit) as client:  # type: ignore[arg-type]
        withheld = await client.call_tool("confirm_rotation", {})
    assert asked == []  # never asked: the server was told no
    assert AWS not in withheld.model_dump_json()
