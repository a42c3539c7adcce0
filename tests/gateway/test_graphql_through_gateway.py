"""A GraphQL API served by the gateway, called with the official client in both eras."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.plan import plan_gateway
from tests.gateway.conftest import gateway_of
from tests.support.graphql_server import SDL, graphql_server, guarded_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio
MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def library_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("graphql")
    (folder / "library.graphql").write_text(SDL)
    with graphql_server() as backend:
        config = f"""
services:
  library:
    graphql: library.graphql
    name: library
    version: "1"
    backend: {backend}
    timeout: 2
    selections:
      book: "{{ id title author {{ name }} }}"
"""
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield f"{base}/mcp/library"


def text(result: types.CallToolResult, index: int = 0) -> str:
    content = result.content[index]
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.fixture(params=MODES)
async def client(library_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(library_url, mode=request.param) as connected:
        yield connected


async def test_root_fields_are_tools_with_hints(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"book", "books", "search", "echo", "addBook", "deleteBook"} <= set(tools)
    assert tools["book"].annotations is not None and tools["book"].annotations.read_only_hint is True
    assert tools["addBook"].annotations is not None and tools["addBook"].annotations.destructive_hint is True
    assert tools["book"].input_schema["required"] == ["id"]
    assert tools["book"].output_schema is not None


async def test_a_query_with_an_override_selection(client: Client) -> None:
    result = await client.call_tool("book", {"id": "b1"})
    assert not result.is_error, text(result)
    book = result.structured_content["book"]  # type: ignore[index]
    assert set(book) == {"id", "title", "author"}
    assert set(book["author"]) == {"name"}
    assert json.loads(text(result)) == result.structured_content


async def test_unions_come_back_with_their_type_names(client: Client) -> None:
    result = await client.call_tool("search", {"text": "e"})
    assert not result.is_error, text(result)
    found = result.structured_content["search"]  # type: ignore[index]
    assert {item["__typename"] for item in found} <= {"Book", "Author"}
    assert found


async def test_a_mutation_with_an_input_object(client: Client) -> None:
    result = await client.call_tool(
        "addBook", {"input": {"title": "Cosmos", "genre": "SCIENCE", "authorId": "a2", "tags": ["space"]}}
    )
    assert not result.is_error, text(result)
    added = result.structured_content["addBook"]  # type: ignore[index]
    assert added["title"] == "Cosmos"
    assert added["genre"] == "SCIENCE"


@pytest.mark.parametrize(
    "attack",
    ['") { __schema { types { name } } } #', 'quote " backslash \\ newline \n end', "$text } mutation { x }"],
)
async def test_string_arguments_stay_data(client: Client, attack: str) -> None:
    result = await client.call_tool("echo", {"text": attack})
    assert not result.is_error, text(result)
    assert result.structured_content == {"echo": attack}


async def test_errors_without_data_are_tool_errors(client: Client) -> None:
    result = await client.call_tool("failing", {})
    assert result.is_error
    assert text(result).startswith("GraphQL errors: ")


async def test_partial_data_comes_with_the_errors(client: Client) -> None:
    result = await client.call_tool("booksByIds", {"ids": ["b1", "nope"]})
    assert not result.is_error, text(result)
    books = result.structured_content["booksByIds"]  # type: ignore[index]
    assert books[0]["id"] == "b1"
    assert books[1] is None
    assert "GraphQL errors:" in text(result, 1)


async def test_invalid_arguments_never_reach_the_backend(client: Client) -> None:
    result = await client.call_tool("book", {"id": "b1", "unknown": 1})
    assert result.is_error
    assert "unknown" in text(result)


async def test_a_live_endpoint_is_introspected_and_served_without_a_backend_setting(tmp_path: Path) -> None:
    with graphql_server() as endpoint:
        config = f"services:\n  library:\n    graphql: {endpoint}\n    introspect: true\n    name: l\n    version: '2'"
        config += "\nserver: {fetch_allow: [127.0.0.1]}\n"  # the test endpoint is on loopback
        with live_app(lambda: gateway_of(config, tmp_path)) as base:
            async with Client(f"{base}/mcp/library", mode="2026-07-28") as connected:
                result = await connected.call_tool("echo", {"text": "hello"})
    assert result.structured_content == {"echo": "hello"}


def test_graphql_services_need_a_name_and_a_version(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="give name and version"):
        parse_config("services:\n  library:\n    graphql: schema.graphql\n", "gateway.yaml", tmp_path)


def test_a_bad_selection_override_is_refused_before_serving(tmp_path: Path) -> None:
    (tmp_path / "library.graphql").write_text(SDL)
    config = (
        "services:\n  library:\n    graphql: library.graphql\n    name: l\n    version: '1'\n"
        "    backend: http://127.0.0.1:9\n    selections: {book: '{ nosuchfield }'}\n"
    )
    with pytest.raises(ConfigError, match="book"):
        plan_gateway(parse_config(config, "gateway.yaml", tmp_path))


async def test_a_live_endpoint_is_introspected_with_the_services_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIBRARY_TOKEN", "library-token")
    with live_aiohttp(lambda: guarded_app("library-token")) as base:
        lines = [
            "services:",
            "  library:",
            f"    graphql: {base}/graphql",
            "    introspect: true",
            "    name: l",
            "    version: '3'",
            "    credentials: {type: bearer, token: {env: LIBRARY_TOKEN}}",
            "server: {fetch_allow: [127.0.0.1]}",
        ]
        config = "\n".join(lines) + "\n"
        with live_app(lambda: gateway_of(config, tmp_path)) as gateway:
            async with Client(f"{gateway}/mcp/library", mode="2026-07-28") as connected:
                result = await connected.call_tool("echo", {"text": "hello"})
        monkeypatch.delenv("LIBRARY_TOKEN")
        monkeypatch.setenv("LIBRARY_TOKEN", "wrong")
        with pytest.raises(ConfigError, match="introspection failed: HTTP 401"):
            plan_gateway(parse_config(config, "gateway.yaml", tmp_path))
    assert result.structured_content == {"echo": "hello"}
