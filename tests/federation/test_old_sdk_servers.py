"""MCP servers built with old releases of the official Python SDK (1.8.1 speaks 2024-11-05, 1.10.1 2025-06-18,
the last 1.x 2025-11-25), which this project did not write, fronted by the gateway for clients of both eras,
over Streamable HTTP and the 2024-11-05 HTTP+SSE transport."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import old_sdk_upstream

pytestmark = pytest.mark.anyio


@pytest.fixture(
    scope="module",
    params=[
        ("1.8.1", "streamable-http"),
        ("1.10.1", "streamable-http"),
        ("1", "streamable-http"),
        ("1.8.1", "sse"),  # the 2024-11-05 HTTP+SSE transport
        ("1", "sse"),
    ],
    ids="-".join,
)
def gateway_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with old_sdk_upstream(*request.param) as upstream:
        config = f"""
services:
  old:
    mcp: {upstream}
    timeout: 10
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("old-sdk")
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield f"{base}/mcp/old"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_old_sdk_servers_tools_prompts_and_resources_reach_each_client(gateway_url: str, mode: str) -> None:
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    async with Client(gateway_url, mode=mode) as client:  # type: ignore[arg-type]
        assert {tool.name for tool in (await client.list_tools()).tools} == {"add", "count_slowly"}
        added = (await client.call_tool("add", {"a": 2, "b": 3})).content[0]
        assert isinstance(added, types.TextContent) and added.text == "5"
        counted = await client.call_tool("count_slowly", {"upto": 2}, progress_callback=on_progress)
        assert not counted.is_error
        greeting = (await client.get_prompt("greet", {"who": "Ada"})).messages[0].content
        assert isinstance(greeting, types.TextContent) and greeting.text == "Say hello to Ada"
        note = (await client.read_resource("notes://first")).contents[0]
        assert isinstance(note, types.TextResourceContents) and note.text == "remember the milk"
    assert heard == [1.0, 2.0]
