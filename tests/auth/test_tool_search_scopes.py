"""Tool search behind OAuth: search_tools finds and describe_tools describes only the tools the caller's token
may call (one it may not is described as unknown), and call_tool asks for a tool's scope exactly as a direct
call does (403 insufficient_scope)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
    assert [t["name"] for t in listed] == ["search_tools", "describe_tools", "call_tool"]
    assert refused.status == 403 and "insufficient_scope" in refused.headers["www-authenticate"]


def _described(gateway: str, token: str, name: str) -> dict[str, Any]:
    with client(f"{gateway}/mcp/echo", token) as mcp:
        session = mcp.initialize("2025-11-25")  # the session era, as the stateless one above
        reply = session.request("tools/call", {"name": "describe_tools", "arguments": {"names": [name]}})
    result: dict[str, Any] = reply.result
    return result


def test_a_tool_the_token_may_not_call_is_described_as_unknown(gateway: str, idp: Idp) -> None:
    reader = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    writer = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read mcp:write")
    forbidden = _described(gateway, reader, "delete_item")
    unknown = _described(gateway, reader, "no_such_item")
    assert forbidden["isError"] is True
    assert forbidden["content"][0]["text"] == unknown["content"][0]["text"].replace("no_such_item", "delete_item")
    allowed = _described(gateway, writer, "delete_item")
    assert allowed["structuredContent"]["tools"][0]["inputSchema"]["required"] == ["itemId"]
