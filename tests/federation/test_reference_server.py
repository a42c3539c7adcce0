"""The official reference MCP server (`@modelcontextprotocol/server-everything`, npm), which this project did not
write, fronted by the gateway and called with the official client in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext

from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import everything_upstream

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with everything_upstream() as upstream:
        config = f"""
services:
  everything:
    mcp: {upstream}
    exclude: [get-env]
    timeout: 10
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path_factory.mktemp("everything"))) as base:
            yield f"{base}/mcp/everything"


@pytest.fixture(params=["legacy", "2026-07-28"])
async def client(gateway_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(gateway_url, mode=request.param) as connected:
        yield connected


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    return content.text


async def test_its_tools_are_listed_but_those_the_configuration_leaves_out(client: Client) -> None:
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"echo", "get-sum", "get-structured-content", "trigger-long-running-operation"} <= names
    assert "get-env" not in names
    assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names


async def test_its_prompts_and_resources_are_served_and_read_through_the_gateway(client: Client) -> None:
    prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
    assert prompts
    resources = (await client.list_resources()).resources
    assert resources
    first = (await client.read_resource(str(resources[0].uri))).contents[0]
    assert str(first.uri) == str(resources[0].uri)
    templates = (await client.list_resource_templates()).resource_templates
    assert templates


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def _sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="a sampled answer"), model="test-model"
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_what_it_asks_the_client_is_relayed(gateway_url: str, mode: str) -> None:
    async with Client(
        gateway_url,
        mode=mode,
        elicitation_callback=_elicit,
        sampling_callback=_sample,  # type: ignore[arg-type]
    ) as client:
        sampled = await client.call_tool("trigger-sampling-request", {"prompt": "Say something"})
        assert not sampled.is_error and "a sampled answer" in str(sampled.content)
        elicited = await client.call_tool("trigger-elicitation-request", {})
        assert not elicited.is_error and "decline" in str(elicited.content).lower()


async def test_its_tools_answer_through_the_gateway(client: Client) -> None:
    assert "hello there" in text(await client.call_tool("echo", {"message": "hello there"}))
    assert "42" in text(await client.call_tool("get-sum", {"a": 40, "b": 2}))
    weather = await client.call_tool("get-structured-content", {"location": "Chicago"})
    assert not weather.is_error and set(weather.structured_content or {}) == {"temperature", "conditions", "humidity"}
    image = await client.call_tool("get-tiny-image", {})
    assert any(isinstance(block, types.ImageContent) for block in image.content)
    links = await client.call_tool("get-resource-links", {"count": 2})
    assert sum(isinstance(block, types.ResourceLink) for block in links.content) == 2


async def test_its_long_operation_reports_progress_to_the_client(client: Client) -> None:
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    result = await client.call_tool(
        "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
    )
    assert not result.is_error
    assert heard == [1.0, 2.0, 3.0]
