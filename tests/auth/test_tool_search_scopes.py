"""Tool search behind OAuth: search_tools finds only the tools the caller's token may call, and call_tool
asks for a tool's scope exactly as a direct call does (403 insufficient_scope)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.auth.conftest import SERVICE, live_oauth_gateway, oauth_config
from tests.auth.test_resource_server import client
from tests.support.idp import Idp


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = oauth_config(idp.issuer, extra_exposition="    tool_search: true")
    with live_oauth_gateway(config, tmp_path_factory.mktemp("gw")) as base:
        yield base


def _found(gateway: str, token: str) -> list[str]:
    with client(f"{gateway}/mcp/echo", token) as mcp:
        arguments = {"query": "delete an item", "limit": 20}
        reply = mcp.modern("tools/call", {"name": "search_tools", "arguments": arguments})
    return [tool["name"] for tool in reply.result["structuredContent"]["tools"]]


def test_search_shows_only_what_the_token_may_call(gateway: str, idp: Idp) -> None:
    reader = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    writer = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read mcp:write")
    assert "delete_item" not in _found(gateway, reader)
    assert _found(gateway, writer)[0] == "delete_item"
    with client(f"{gateway}/mcp/echo", reader) as mcp:
        listed = mcp.modern("tools/list").result["tools"]
        refused = mcp.modern(
            "tools/call", {"name": "call_tool", "arguments": {"name": "delete_item", "arguments": {"itemId": "1"}}}
        )
    assert [t["name"] for t in listed] == ["search_tools", "call_tool"]
    assert refused.status == 403 and "insufficient_scope" in refused.headers["www-authenticate"]
