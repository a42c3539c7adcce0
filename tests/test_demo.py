"""The demo a newcomer starts with: the Bookshelf API through the gateway, with the official client."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial

import mcp_types as types
import pytest
from mcp import Client

from apimcp.demo import seed
from apimcp.demo_api import start
from apimcp.demo_api.backend import make_png
from apimcp.embedded import EmbeddedApp, embedded
from apimcp.protocol import EndpointOptions
from tests.support.live_server import live_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("demo")

    @asynccontextmanager
    async def demo() -> AsyncIterator[EmbeddedApp]:
        runner, port = await start("127.0.0.1", 0)
        try:
            prepare = partial(seed, backend_url=f"http://127.0.0.1:{port}")
            async with embedded(data_dir, database_url=None, options=EndpointOptions(), prepare=prepare) as started:
                yield started.app
        finally:
            await runner.cleanup()

    with live_app(demo) as base:
        yield f"{base}/mcp/default/bookshelf"


def text(result: types.CallToolResult) -> str:
    assert isinstance(result.content[0], types.TextContent)
    return result.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_bookshelf_through_mcp(demo_url: str, mode: str) -> None:
    async with Client(demo_url, mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {
            "list_books", "add_book", "get_book", "update_book", "delete_book", "upload_cover", "get_cover",
            "list_reviews", "add_review", "get_stats", "books_by_author", "book_with_reviews",
        }  # fmt: skip
        listed = await client.call_tool("list_books", {"limit": 2})
        assert listed.structured_content["total"] >= 5  # type: ignore[index]
        assert len(listed.structured_content["books"]) == 2  # type: ignore[index]

        added = await client.call_tool("add_book", {"title": "Dune", "author": "Frank Herbert", "year": 1965})
        book = added.structured_content
        assert isinstance(book, dict) and book["title"] == "Dune"
        book_id = book["id"]
        updated = await client.call_tool("update_book", {"bookId": book_id, "tags": ["sf", "classic"]})
        assert updated.structured_content["tags"] == ["sf", "classic"]  # type: ignore[index]
        found = await client.call_tool("list_books", {"q": "dune", "tags": ["sf"]})
        assert [b["id"] for b in found.structured_content["books"]] == [book_id]  # type: ignore[index]

        png = make_png(2, 2)
        uploaded = await client.call_tool(
            "upload_cover", {"bookId": book_id, "file": base64.b64encode(png).decode(), "caption": "Arrakis"}
        )
        assert not uploaded.is_error, text(uploaded)
        cover = await client.call_tool("get_cover", {"bookId": book_id})
        assert isinstance(cover.content[0], types.ImageContent)
        assert base64.b64decode(cover.content[0].data) == png

        review = await client.call_tool(
            "add_review", {"bookId": book_id, "stars": 5, "text": "Spice!", "X-Reviewer": "Ada"}
        )
        assert not review.is_error, text(review)
        reviews = await client.call_tool("list_reviews", {"bookId": book_id, "filter": {"minStars": 4}})
        assert "Spice!" in text(reviews)  # in TOON, the demo's filter for this tool

        author = await client.call_tool("books_by_author", {"author": "frank herbert"})
        assert [b["title"] for b in author.structured_content["books"]] == ["Dune"]  # type: ignore[index]
        together = await client.call_tool("book_with_reviews", {"bookId": book_id})
        assert together.structured_content["book"]["title"] == "Dune"  # type: ignore[index]
        assert "books" in text(await client.call_tool("get_stats"))

        assert not (await client.call_tool("delete_book", {"bookId": book_id})).is_error
        missing = await client.call_tool("get_book", {"bookId": book_id})
        assert missing.is_error and text(missing).startswith("HTTP 404")
        invalid = await client.call_tool("add_review", {"bookId": 1, "stars": 9})
        assert invalid.is_error and "stars" in text(invalid)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_demo_offers_prompts_and_resources(demo_url: str, mode: str) -> None:
    async with Client(demo_url, mode=mode) as client:  # type: ignore[arg-type]
        assert {p.name for p in (await client.list_prompts()).prompts} == {"recommend_books", "review_digest"}
        prompt = await client.get_prompt("recommend_books", {"mood": "romantic"})
        assert isinstance(prompt.messages[0].content, types.TextContent)
        assert "feels romantic" in prompt.messages[0].content.text
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert uris == {"note://bookshelf/house-rules", "file:///openapi.yaml"}
        book = (await client.read_resource("file:///books/1")).contents[0]
        assert isinstance(book, types.TextResourceContents) and '"id":1' in book.text.replace(" ", "")
