"""Lists longer than `max_list_page_items` come in pages the engine cuts, in both eras."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, McpHandler, Page, RequestContext, ServerFeatures, Tool
from apimcp.protocol.limits import EndpointLimits
from tests.support.live_server import live_server
from tests.support.mcp_http import McpHttp


class ManyTools(McpHandler):
    features = ServerFeatures(tools=True, tools_list_changed=True)

    def __init__(self, count: int) -> None:
        self.page = Page(items=tuple(Tool(name=f"tool_{i:02}", input_schema={"type": "object"}) for i in range(count)))

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        assert cursor is None  # the engine pages: handlers return whole lists
        return self.page


@pytest.fixture
def served() -> Iterator[tuple[McpEndpoint, str]]:
    endpoint = McpEndpoint(ManyTools(25), EndpointOptions(limits=EndpointLimits(max_list_page_items=10)))
    with live_server(endpoint, endpoint.shutdown) as base:
        yield endpoint, f"{base}/mcp"


def pages(list_page: Any) -> list[list[str]]:
    seen, cursor = [], None
    for _ in range(10):
        result = list_page({"cursor": cursor} if cursor else {})
        seen.append([t["name"] for t in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return seen
    raise AssertionError("no last page")


def test_both_eras_walk_the_same_pages(served: tuple[McpEndpoint, str]) -> None:
    _, url = served
    with McpHttp(url) as mcp:
        modern = pages(lambda params: mcp.modern("tools/list", params).result)
        session = mcp.initialize()
        legacy = pages(lambda params: session.request("tools/list", params).result)
    assert [len(p) for p in modern] == [10, 10, 5]
    assert legacy == modern
    assert [name for page in modern for name in page] == [f"tool_{i:02}" for i in range(25)]


def test_a_cursor_of_a_list_that_changed_is_refused(served: tuple[McpEndpoint, str]) -> None:
    endpoint, url = served
    with McpHttp(url) as mcp:
        cursor = mcp.modern("tools/list").result["nextCursor"]
        endpoint.replace_handler(ManyTools(25))  # another snapshot: another list, even with the same tools
        refused = mcp.modern("tools/list", {"cursor": cursor})
        made_up = mcp.modern("tools/list", {"cursor": "1.not-a-token"})
    for reply in (refused, made_up):
        assert reply.status == 400
        assert reply.error["code"] == -32602
        assert "list again from the start" in reply.error["message"]


def test_a_short_list_is_one_page_without_a_cursor() -> None:
    endpoint = McpEndpoint(ManyTools(3), EndpointOptions(limits=EndpointLimits(max_list_page_items=10)))
    with live_server(endpoint, endpoint.shutdown) as base, McpHttp(f"{base}/mcp") as mcp:
        result = mcp.modern("tools/list").result
    assert len(result["tools"]) == 3
    assert "nextCursor" not in result
