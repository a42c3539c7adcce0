"""Tool search on GitHub's description (1,223 operations, from npm `@octokit/openapi`, installed by
scripts/setup.sh --test), through a gateway process: tools/list is three tools, ten hits cost a few KB,
describe_tools gives a tool's schemas, every tool stays callable through call_tool with its validation, and
the hand-written query set finds the right tool in the top 5."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, free_port
from tests.toolsearch.github_queries import QUERIES

GITHUB = (
    Path(__file__).resolve().parents[2]
    / "tools" / "node" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
)  # fmt: skip
RECALL_AT_5_FLOOR = 0.9


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not GITHUB.exists():
        pytest.fail("GitHub's description is missing: run scripts/setup.sh --test")
    folder = tmp_path_factory.mktemp("github")
    with live_aiohttp(echo_app) as echo:
        config = folder / "gateway.yaml"
        config.write_text(
            f'services:\n  github: {{openapi: {GITHUB}, backend: "{echo}/v1"}}\n'
            "expositions:\n  github: {services: [github], tool_search: true}\n"
        )
        port = free_port()
        gateway = Background(folder / "g.log", "serve", str(config), "--port", str(port))
        try:
            gateway.wait_for_http(f"http://127.0.0.1:{port}/healthz", 90)
            yield f"http://127.0.0.1:{port}/mcp/github"
        finally:
            gateway.stop()


def _call(mcp: McpHttp, name: str, arguments: dict[str, Any]) -> Any:
    return mcp.modern("tools/call", {"name": name, "arguments": arguments}).result


TEN_HITS_BYTES = 8_000
"""What ten hits may weigh on the wire (the text and the structured copy): about 5 KB for this query, 23 KB
when hits carried descriptions and input schemas."""


def test_tools_list_is_three_small_tools(url: str) -> None:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list")
        session = mcp.initialize("2025-11-25")
        legacy = session.request("tools/list").result["tools"]
    assert [t["name"] for t in reply.result["tools"]] == ["search_tools", "describe_tools", "call_tool"]
    assert len(orjson.dumps(reply.result)) < 3_000  # instead of about 6 MB
    assert [t["name"] for t in legacy] == ["search_tools", "describe_tools", "call_tool"]


def test_ten_hits_cost_little_and_describe_gives_the_schemas(url: str) -> None:
    with McpHttp(url) as mcp:
        reply = mcp.modern(
            "tools/call", {"name": "search_tools", "arguments": {"query": "a pull request", "limit": 10}}
        )
        hits = reply.result["structuredContent"]["tools"]
        described = _call(mcp, "describe_tools", {"names": [hit["name"] for hit in hits]})["structuredContent"]
    size = len(orjson.dumps(reply.result))
    print(f"10 hits: {size:,} bytes; their definitions: {len(orjson.dumps(described)):,} bytes")
    assert len(hits) == 10 and size < TEN_HITS_BYTES
    assert all(set(hit) <= {"name", "title", "summary", "parameters", "moreParameters"} for hit in hits)
    assert [tool["name"] for tool in described["tools"]] == [hit["name"] for hit in hits]
    assert all("inputSchema" in tool and "annotations" in tool for tool in described["tools"])


def test_filters_on_github_s_tags_and_read_only_tools(url: str) -> None:
    with McpHttp(url) as mcp:
        reading = _call(mcp, "search_tools", {"query": "delete a repository", "readOnly": True, "limit": 20})
        issues = _call(mcp, "search_tools", {"query": "create a comment", "tag": "issues", "limit": 20})
    read_only = [hit["name"] for hit in reading["structuredContent"]["tools"]]
    assert read_only and "repos_delete" not in read_only and not any("delete" in n for n in read_only)
    tagged = [hit["name"] for hit in issues["structuredContent"]["tools"]]
    assert "issues_create_comment" in tagged and all(n.startswith("issues_") for n in tagged)


def test_every_tool_is_reachable_through_call_tool(url: str) -> None:
    with McpHttp(url) as mcp:
        found = _call(mcp, "search_tools", {"query": "get a repository", "limit": 3})["structuredContent"]["tools"]
        assert found[0]["name"] == "repos_get" and found[0]["parameters"] == ["owner*", "repo*"]
        called = _call(mcp, "call_tool", {"name": "repos_get", "arguments": {"owner": "octo", "repo": "cat"}})
        # The echo backend is not GitHub: its answer fails GitHub's output schema, which the gateway says,
        # showing what the backend received: the call went through like a direct one.
        answer = called["content"][0]["text"]
        assert "not as its API description says" in answer and '"path": "/v1/repos/octo/cat"' in answer
        direct = _call(mcp, "repos_get", {"owner": "octo", "repo": "cat"})
        assert direct["content"][0]["text"].split("(")[0] == answer.split("(")[0]
        invalid = _call(mcp, "call_tool", {"name": "repos_get", "arguments": {"owner": "octo"}})
        assert invalid["isError"] and "repo" in invalid["content"][0]["text"]  # validated before any call
        unknown = mcp.modern("tools/call", {"name": "call_tool", "arguments": {"name": "no_such_tool"}})
        assert unknown.error["code"] == -32602
        bad = _call(mcp, "search_tools", {"query": "", "limit": 500})
        assert bad["isError"] and "query" in bad["content"][0]["text"]


def test_recall_at_5_on_the_query_set(url: str) -> None:
    hits = 0
    misses = []
    with McpHttp(url) as mcp:
        for query, wanted in QUERIES:
            found = _call(mcp, "search_tools", {"query": query})["structuredContent"]["tools"]
            names = [tool["name"] for tool in found]
            if wanted & set(names):
                hits += 1
            else:
                misses.append((query, sorted(wanted), names))
    recall = hits / len(QUERIES)
    print(f"recall@5 {recall:.3f} on {len(QUERIES)} queries; missed: {json.dumps(misses)}")
    assert len(QUERIES) >= 50
    assert recall >= RECALL_AT_5_FLOOR, misses
