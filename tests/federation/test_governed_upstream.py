"""An MCP server's tools under the plan's policies, like any tool: a rule on `tool.kind` and the tool denies its
calls and hides it from the listing, a rule on the arguments denies the calls it holds for."""

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

RULES = [
    {"name": "no-notes", "when": 'tool.kind == "mcp" && tool.name == "find_note"', "effect": "deny",
     "message": "Notes are private."},
    {"name": "small-sums", "when": 'tool.kind == "mcp" && has(args.a) && args.a > 100', "effect": "deny"},
]  # fmt: skip


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sdk_upstream() as upstream:
        config = f"""
services:
  notes: {{mcp: "{upstream}"}}
expositions:
  governed: {{services: [notes], policies: {json.dumps(RULES)}}}
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("governed")
        with live_app(lambda: gateway_of(config, folder)) as served:
            yield served


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_mcp_server_s_tools_are_governed_like_any(base: str, mode: str) -> None:
    async with Client(f"{base}/mcp/governed", mode=mode) as client:  # type: ignore[arg-type]
        listed = [tool.name for tool in (await client.list_tools()).tools]
        assert "add" in listed and "find_note" not in listed
        denied = await client.call_tool("find_note", {"topic": "tea"})
        assert denied.is_error
        block = denied.content[0]
        assert isinstance(block, types.TextContent)
        assert block.text == "Calling find_note is denied by the policy rule 'no-notes': Notes are private."
        assert (await client.call_tool("add", {"a": 20, "b": 22})).structured_content == {"result": 42}
        big = await client.call_tool("add", {"a": 200, "b": 1})
        assert big.is_error and "small-sums" in big.content[0].text  # type: ignore[union-attr]
