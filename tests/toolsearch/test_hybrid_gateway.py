"""Tool search by meaning through a gateway: an exposition with tool_search answers from words at once, and
from words and meanings once its tools' vectors are built in the background, without a stalled request."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from apimcp.toolsearch.embedding import available
from apimcp.toolsearch.index import ToolIndex
from tests.gateway.conftest import live_echo_gateway
from tests.support.mcp_http import McpHttp
from tests.toolsearch.meaning_queries import TOOLS, tools

pytestmark = pytest.mark.skipif(
    not available(), reason="the search extra is not installed (scripts/setup.sh --test installs it)"
)
GAP = "who am I logged in as"
"""No word in common with `myself_get`'s texts (nor any other tool's)."""


def _spec() -> dict[str, Any]:
    paths = {
        f"/{name}": {"post": {"operationId": name, "summary": title, "description": text,
                              "responses": {"200": {"description": "done"}}}}
        for name, title, text in TOOLS
    }  # fmt: skip
    return {"openapi": "3.1.0", "info": {"title": "desk", "version": "1"}, "paths": paths}


def _found(mcp: McpHttp, query: str, limit: int = 5) -> list[str]:
    reply = mcp.modern("tools/call", {"name": "search_tools", "arguments": {"query": query, "limit": limit}})
    return [tool["name"] for tool in reply.result["structuredContent"]["tools"]]


def test_search_by_meaning_once_vectors_are_ready(tmp_path: Path) -> None:
    assert not ToolIndex(tools()).search(GAP, 5)  # words alone find nothing
    (tmp_path / "desk.json").write_bytes(orjson.dumps(_spec()))
    config = (
        'services:\n  desk: {openapi: desk.json, backend: "{backend}"}\n'
        "expositions:\n  desk: {services: [desk], tool_search: true}\n"
    )
    with live_echo_gateway(config, tmp_path) as base, McpHttp(f"{base}/mcp/desk") as mcp:
        deadline = time.monotonic() + 60
        found = _found(mcp, GAP, 1)
        while found != ["myself_get"] and time.monotonic() < deadline:
            time.sleep(0.2)
            found = _found(mcp, GAP, 1)
        assert found == ["myself_get"]
        assert _found(mcp, "merge a pull request", 1) == ["pulls_merge"]  # words still count
        assert "issues_assign" in _found(mcp, "give the ticket to Alice")
