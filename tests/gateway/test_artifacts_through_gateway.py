"""Prompts, resources, custom tools and output filters, served from a configuration file's artifacts.

The Bookshelf demo API runs on loopback with its four demo artifact files (reShapr's format) plus
test-only ones; the official `mcp` client talks to the gateway in both eras.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import orjson
import pytest
import toon_format
from mcp import Client
from mcp.shared.exceptions import MCPError

from apimcp.demo_api import spec_path
from tests.gateway.artifact_gateway import CARD, artifact_gateway

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with artifact_gateway(tmp_path_factory.mktemp("artifacts")) as served:
        yield served


def _text(result: Any) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


# --- prompts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_prompts_are_listed_and_rendered_with_their_arguments(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"recommend_books", "review_digest"}
        recommend = prompts["recommend_books"]
        assert recommend.title == "Recommend books for a mood"
        assert recommend.arguments is not None
        assert [(a.name, a.required) for a in recommend.arguments] == [("mood", True)]

        rendered = await client.get_prompt("recommend_books", {"mood": "curious"})
        assert len(rendered.messages) == 1 and rendered.messages[0].role == "user"
        content = rendered.messages[0].content
        assert isinstance(content, types.TextContent)
        assert "a reader who feels curious today" in content.text
        assert "${" not in content.text

        with pytest.raises(MCPError) as missing:
            await client.get_prompt("recommend_books", {})
        assert missing.value.error.code == -32602 and "mood" in missing.value.error.message
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no_such_prompt", {})
        assert unknown.value.error.code == -32602 and "no_such_prompt" in unknown.value.error.message


@pytest.mark.parametrize("mode", MODES)
async def test_prompt_arguments_and_template_variables_complete(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        moods = await client.complete(types.PromptReference(name="recommend_books"), {"name": "mood", "value": "c"})
        assert moods.completion.values == ["curious"]
        ids = await client.complete(
            types.ResourceTemplateReference(uri="file:///books/{bookId}"), {"name": "bookId", "value": ""}
        )
        assert ids.completion.values == ["1", "2", "3", "4"]


# --- resources -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_resources_are_listed_and_read_inline_from_the_backend_and_from_templates(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert set(listed) == {
            "note://bookshelf/house-rules", "file:///openapi.yaml", "ui://bookshelf/book-card.html",
            "ui://bookshelf/missing.html",
        }  # fmt: skip
        rules = listed["note://bookshelf/house-rules"]
        assert rules.mime_type == "text/markdown"
        assert rules.annotations is not None and rules.annotations.priority == 0.8
        templates = (await client.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.name) for t in templates] == [("file:///books/{bookId}", "book")]

        inline = (await client.read_resource("note://bookshelf/house-rules")).contents[0]
        assert isinstance(inline, types.TextResourceContents) and inline.text.startswith("# House rules")

        description = (await client.read_resource("file:///openapi.yaml")).contents[0]
        assert isinstance(description, types.TextResourceContents)
        assert description.text == spec_path().read_text()

        book = (await client.read_resource("file:///books/2")).contents[0]
        assert isinstance(book, types.TextResourceContents)
        assert book.mime_type == "application/json"
        assert orjson.loads(book.text)["id"] == 2


async def test_a_read_that_matches_nothing_is_the_revisions_not_found_error(url: str) -> None:
    async with Client(url, mode="legacy") as client:  # negotiates 2025-11-25: -32002 in sessions
        with pytest.raises(MCPError) as legacy:
            await client.read_resource("note://nothing/here")
    assert legacy.value.error.code == -32002
    async with Client(url, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as modern:
            await client.read_resource("note://nothing/here")
    assert modern.value.error.code == -32602
    assert modern.value.error.data == {"uri": "note://nothing/here"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_ui_resource_is_an_mcp_app_and_its_tool_points_to_it(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["get_book"].meta is not None
        assert tools["get_book"].meta["ui"] == {"resourceUri": "ui://bookshelf/book-card.html"}
        card = (await client.read_resource("ui://bookshelf/book-card.html")).contents[0]
        assert isinstance(card, types.TextResourceContents)
        assert card.mime_type == "text/html;profile=mcp-app"
        assert card.text == CARD
        with pytest.raises(MCPError) as missing:
            await client.read_resource("ui://bookshelf/missing.html")
        assert "404" in missing.value.error.message


# --- custom tools ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_declarative_custom_tool_replaces_its_target(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "get_author" not in tools
        custom = tools["books_by_author"]
        assert custom.title == "Books by an author"
        assert custom.input_schema["required"] == ["author"]
        result = await client.call_tool("books_by_author", {"author": "jane austen"})
        assert not result.is_error, _text(result)
        assert result.structured_content is not None
        assert {b["title"] for b in result.structured_content["books"]} >= {"Pride and Prejudice"}
        refused = await client.call_tool("books_by_author", {})
        assert refused.is_error and "author" in _text(refused)
        with pytest.raises(MCPError):
            await client.call_tool("get_author", {"name": "jane austen"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_scripted_custom_tool_calls_tools_concurrently(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("book_with_reviews", {"bookId": 1})
        assert not result.is_error, _text(result)
        value = result.structured_content
        assert isinstance(value, dict)
        assert value["book"]["id"] == 1
        assert isinstance(value["reviews"], list | dict)
        assert orjson.loads(_text(result)) == value
        failed = await client.call_tool("book_with_reviews", {"bookId": 9999})
        assert failed.is_error
        assert orjson.loads(_text(failed)) == {
            "message": "There is no such book on the shelf",
            "data": {"bookId": 9999},
        }


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("endless", "time"),
        ("hungry", "memory"),
        ("sneaky", "delete_book"),
        ("greedy", "10"),
        ("recursive", "nested too deeply"),
        ("thrower", "the shelf is closed today"),
    ],
)
async def test_script_guardrails_hold_and_end_in_a_tool_error(url: str, tool: str, expected: str) -> None:
    async with Client(url, mode="2026-07-28") as client:
        result = await client.call_tool(tool, {})
        assert result.is_error
        assert expected in _text(result).lower()


async def test_an_endless_script_does_not_hold_up_other_requests(url: str) -> None:
    async with Client(url, mode="2026-07-28") as client:
        endless = asyncio.ensure_future(client.call_tool("endless", {}))
        await asyncio.sleep(0.05)
        stats = await client.call_tool("get_stats", {})
        assert not stats.is_error
        assert not endless.done()  # the other call was answered while the script was still looping (an order)
        assert (await endless).is_error


async def test_a_script_reaches_a_service_by_name_and_version(url: str) -> None:
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("across", {})
        assert not result.is_error, _text(result)
        assert "books" in _text(result)


# --- output filters --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_retain_filter_shrinks_results_and_their_output_schema(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["list_books"].output_schema
        assert schema is not None
        assert set(schema["properties"]) == {"books", "total"}
        result = await client.call_tool("list_books", {"limit": 2})
        assert not result.is_error, _text(result)
        books = result.structured_content["books"]  # type: ignore[index]
        assert len(books) == 2 and all(set(book) == {"id", "title", "author"} for book in books)
        assert orjson.loads(_text(result)) == result.structured_content


@pytest.mark.parametrize("mode", MODES)
async def test_a_toon_filter_turns_the_text_into_toon_and_keeps_the_structured_content(url: str, mode: str) -> None:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("list_reviews", {"bookId": 1})
        assert not result.is_error, _text(result)
        reviews = result.structured_content
        assert reviews is not None
        text = _text(result)
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(text)
        if mode == "legacy":  # before 2026-07-28, structured content is an object: the engine wraps arrays
            assert isinstance(reviews, dict)
            reviews = reviews["result"]
        assert isinstance(reviews, list) and reviews
        assert text == toon_format.encode(reviews)
