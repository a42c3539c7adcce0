"""reShapr's MCP support matrix (the floor apimcp starts from), row by row, for every revision.

Where reShapr stops short (no ping, logging, subscriptions or completion; one JSON body) apimcp
serves what each revision defines; the tests say so where the expectation differs from reShapr's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.mcp_http import MODERN, SESSION_VERSIONS, McpHttp, Reply

ALL_VERSIONS = (*SESSION_VERSIONS, MODERN)
DISPATCHED = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://text"}),
]
REMOVED_IN_2026 = ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"]
PARAMS_OF = {
    "logging/setLevel": {"level": "info"},
    "resources/subscribe": {"uri": "test://text"},
    "resources/unsubscribe": {"uri": "test://text"},
    "initialize": {"protocolVersion": MODERN, "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
}


def request(mcp: McpHttp, version: str, method: str, params: dict[str, Any]) -> Reply:
    if version == MODERN:
        return mcp.modern(method, params)
    return mcp.initialize(version).request(method, params)


# --- protocol versions and modes ---------------------------------------------------------------


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_session_versions_start_with_initialize_and_carry_a_session_id(mcp: McpHttp, version: str) -> None:
    session = mcp.initialize(version)
    assert session.version == version
    assert session.request("tools/list", {}).status == 200
    assert mcp.request("tools/list", {}, {"mcp-protocol-version": version}).status == 400  # no session id


def test_2026_starts_with_discover_and_needs_no_session(mcp: McpHttp) -> None:
    discover = mcp.modern("server/discover")
    assert MODERN in discover.result["supportedVersions"]
    assert "mcp-session-id" not in discover.headers
    assert mcp.modern("tools/list").status == 200


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_result_dialect_and_cache_hints(mcp: McpHttp, version: str) -> None:
    result = request(mcp, version, "prompts/list", {}).result
    if version == MODERN:
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 300000 and result["cacheScope"] == "public"
    else:
        assert not {"resultType", "ttlMs", "cacheScope"} & result.keys()


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_user_elicitation_per_revision(mcp: McpHttp, version: str) -> None:
    """reShapr answers -32042 in every session revision; apimcp only where the revision defines it."""
    if version == MODERN:
        result = mcp.modern("tools/call", {"name": "url_elicitation"}, capabilities={"elicitation": {"url": {}}}).result
        assert result["resultType"] == "input_required"
        (only,) = result["inputRequests"].values()
        assert only["params"]["mode"] == "url"
        return
    reply = mcp.initialize(version).request("tools/call", {"name": "url_elicitation"})
    assert reply.error["code"] == (-32042 if version == "2025-11-25" else -32600)


# --- implemented server methods ----------------------------------------------------------------


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize(("method", "params"), DISPATCHED)
def test_dispatched_methods_answer_in_every_revision(
    mcp: McpHttp, version: str, method: str, params: dict[str, Any]
) -> None:
    reply = request(mcp, version, method, params)
    assert reply.status == 200
    assert "result" in reply.body


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_discover_is_not_the_session_entry_point(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).request("server/discover", {})
    assert reply.status == 200 and reply.error["code"] == -32601


@pytest.mark.parametrize("method", REMOVED_IN_2026)
def test_methods_removed_in_2026_are_404(mcp: McpHttp, method: str) -> None:
    reply = mcp.modern(method, PARAMS_OF.get(method, {}))
    assert reply.status == 404 and reply.error["code"] == -32601


@pytest.mark.parametrize("version", SESSION_VERSIONS)
@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"])
def test_session_methods_reshapr_lacks_are_served(mcp: McpHttp, version: str, method: str) -> None:
    reply = mcp.initialize(version).request(method, PARAMS_OF.get(method, {}))
    assert reply.status == 200 and reply.result == {}


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_completion_is_served(mcp: McpHttp, version: str) -> None:
    params = {"ref": {"type": "ref/resource", "uri": "test://items/{id}"}, "argument": {"name": "id", "value": "a"}}
    assert request(mcp, version, "completion/complete", params).result["completion"]["values"] == ["alice", "albert"]


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize("method", ["roots/list", "sampling/createMessage", "elicitation/create"])
def test_client_side_methods_are_not_server_methods(mcp: McpHttp, version: str, method: str) -> None:
    reply = request(mcp, version, method, {})
    assert reply.error["code"] == -32601
    assert reply.status == (404 if version == MODERN else 200)


# --- the modern request contract ------------------------------------------------------------------


def test_envelope_version_must_be_supported(mcp: McpHttp) -> None:
    reply = mcp.modern(
        "tools/list",
        meta={"io.modelcontextprotocol/protocolVersion": "1999-01-01"},
        headers={"mcp-protocol-version": "1999-01-01"},
    )
    assert reply.status == 400 and reply.error["code"] == -32022
    assert reply.error["data"]["requested"] == "1999-01-01"


@pytest.mark.parametrize(
    "header",
    [{"mcp-protocol-version": "2025-11-25"}, {"mcp-method": "prompts/list"}, {"mcp-name": "other"}],
)
def test_mirrors_must_agree(mcp: McpHttp, header: dict[str, str]) -> None:
    reply = mcp.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers=header)
    assert reply.status == 400 and reply.error["code"] == -32020


def test_all_mirrors_matching_are_accepted(mcp: McpHttp) -> None:
    assert mcp.modern("resources/read", {"uri": "test://text"}).status == 200


def test_resource_not_found(mcp: McpHttp) -> None:
    reply = mcp.modern("resources/read", {"uri": "test://nope"})
    assert reply.error["code"] == -32602 and reply.error["data"] == {"uri": "test://nope"}


def test_legacy_version_without_session_is_refused(mcp: McpHttp) -> None:
    """reShapr answers 200/-32600 here; the 2025-11-25 transport says 400."""
    reply = mcp.request("prompts/list", {}, {"mcp-protocol-version": "2025-06-18"})
    assert reply.status == 400 and reply.error["code"] == -32600
