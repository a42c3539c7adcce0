"""Progressive discovery over a GraphQL API with the official client in both eras: queries are the read-only
tools, `query` and `mutation` are tags, and a described mutation says it is destructive."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tests.gateway.conftest import gateway_of
from tests.support.graphql_server import SDL, graphql_server
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio
QUERIES = {"book", "author", "books", "search", "node", "echo", "echoMany", "failing", "booksByIds", "slow", "big",
           "requestInfo", "passedHeaders", "oldField"}  # fmt: skip


@pytest.fixture(scope="module")
def library_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("graphql")
    (folder / "library.graphql").write_text(SDL)
    with graphql_server() as backend:
        config = (
            "services:\n"
            f"  library: {{graphql: library.graphql, name: library, version: '1', backend: {backend}}}\n"
            "expositions:\n"
            "  library: {services: [library], tool_search: true}\n"
        )
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield f"{base}/mcp/library"


@pytest.fixture(params=["legacy", "2026-07-28"])
async def client(library_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(library_url, mode=request.param) as connected:
        yield connected


async def _structured(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def _names(client: Client, **arguments: Any) -> set[str]:
    found = await _structured(client, "search_tools", {"limit": 20, **arguments})
    return {hit["name"] for hit in found["tools"]}


async def test_queries_are_read_only_and_operation_types_are_tags(client: Client) -> None:
    assert [tool.name for tool in (await client.list_tools()).tools] == ["search_tools", "describe_tools", "call_tool"]
    reading = await _names(client, query="add or delete a book", readOnly=True)
    assert "book" in reading and reading <= QUERIES
    assert await _names(client, query="add or delete a book", tag="mutation") == {"addBook", "deleteBook"}
    assert await _names(client, query="a book", tag="Query") <= QUERIES


async def test_a_described_mutation_says_it_is_destructive_and_call_tool_calls_it(client: Client) -> None:
    described = (await _structured(client, "describe_tools", {"names": ["addBook"]}))["tools"][0]
    assert described["annotations"]["destructiveHint"] is True and described["annotations"]["readOnlyHint"] is False
    assert described["inputSchema"]["required"] == ["input"]
    result = await client.call_tool("call_tool", {"name": "book", "arguments": {"id": "b1"}})
    content = result.content[0]
    assert not result.is_error and isinstance(content, types.TextContent) and "The Dispossessed" in content.text
