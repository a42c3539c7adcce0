"""The demo a newcomer starts with, through the official client in both eras."""

from __future__ import annotations

from collections.abc import Iterator

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext

from apimcp.demo import NotebookDemo
from apimcp.protocol import McpEndpoint
from tests.support.live_server import live_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def demo_url() -> Iterator[str]:
    endpoint = McpEndpoint(NotebookDemo())
    with live_server(endpoint, endpoint.shutdown) as base:
        yield f"{base}/mcp"


async def _confirm(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_demo_notebook(demo_url: str, mode: str) -> None:
    async with Client(demo_url, mode=mode, elicitation_callback=_confirm) as client:  # type: ignore[arg-type]
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["add_note", "search_notes", "delete_note", "word_count"]
        added = await client.call_tool("add_note", {"title": "Groceries", "text": "milk and bread"})
        note_id = added.structured_content["id"]  # type: ignore[index]
        found = await client.call_tool("search_notes", {"query": "MILK"})
        assert found.structured_content == {"notes": [{"id": note_id, "title": "Groceries", "text": "milk and bread"}]}
        read = await client.read_resource(f"note://{note_id}")
        assert read.contents[0].text == "milk and bread"  # type: ignore[union-attr]
        prompt = await client.get_prompt("summarize_note", {"id": str(note_id)})
        assert "milk and bread" in prompt.messages[0].content.text  # type: ignore[union-attr]
        counted = await client.call_tool("word_count")
        assert counted.content[0].text == "12 words in 2 notes"  # type: ignore[union-attr]
        deleted = await client.call_tool("delete_note", {"id": note_id})
        assert deleted.content[0].text == f"Deleted note {note_id}."  # type: ignore[union-attr]
        missing = await client.call_tool("delete_note", {"id": note_id})
        assert missing.is_error
