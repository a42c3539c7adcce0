"""Tool search and code mode over an MCP server's tools: found by search, described with TypeScript, and called
from one program whose inner calls go through the server like any call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import sdk_upstream

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sdk_upstream() as upstream:
        config = f"""
services:
  notes: {{mcp: "{upstream}"}}
expositions:
  searched: {{services: [notes], tool_search: true}}
  coded: {{services: [notes], code_mode: on}}
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("modes")
        with live_app(lambda: gateway_of(config, folder)) as served:
            yield served


def text(result: types.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, types.TextContent), result
    return content.text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_search_finds_an_mcp_servers_tool_and_calls_it(base: str, mode: str) -> None:
    async with Client(f"{base}/mcp/searched", mode=mode) as client:  # type: ignore[arg-type]
        found = await client.call_tool("search_tools", {"query": "sum of two integers"})
        assert "add" in [hit["name"] for hit in (found.structured_content or {})["tools"]]
        called = await client.call_tool("call_tool", {"name": "add", "arguments": {"a": 20, "b": 22}})
        assert called.structured_content == {"result": 42}


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_program_calls_an_mcp_servers_tools_in_parallel(base: str, mode: str) -> None:
    async with Client(f"{base}/mcp/coded", mode=mode) as client:  # type: ignore[arg-type]
        described = await client.call_tool("describe_tools", {"names": ["add"]})
        assert "add(" in text(described)
        code = """
const [x, y] = await Promise.all([tools.add({a: 1, b: 2}), tools.add({a: 3, b: 4})]);
const note = await tools.find_note({topic: "tea"});
return {sum: x.result + y.result, note: note.text};
"""
        ran = await client.call_tool("execute_code", {"code": code})
        assert not ran.is_error, ran.content
        assert json.loads(text(ran)) == {"sum": 10, "note": "all about tea"}
