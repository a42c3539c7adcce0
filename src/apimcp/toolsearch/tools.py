"""The two tools an exposition with tool search lists: `search_tools` (the best matches, with their input
schemas) and `call_tool` (any allowed tool by name, validated and guarded as a direct call would be)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from apimcp.protocol.models import CallToolResult, Page, TextContent, Tool, ToolAnnotations
from apimcp.toolsearch.index import ToolIndex

SEARCH = "search_tools"
CALL = "call_tool"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 1000
DESCRIPTION_CHARS = 600

SEARCH_TOOL = Tool(
    name=SEARCH,
    title="Find tools",
    description=(
        "Search this server's tools by what you want to do (plain words: 'merge a pull request'). Returns the "
        "best matches with their input schemas; call one with call_tool."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do", "maxLength": MAX_QUERY_CHARS},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        },
        "required": ["query"],
    },
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
CALL_TOOL = Tool(
    name=CALL,
    title="Call a tool",
    description="Call one of this server's tools by name (find it with search_tools) with its arguments.",
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The tool's name, as search_tools gave it"},
            "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says"},
        },
        "required": ["name"],
    },
)
SEARCH_PAGE: Page[Tool] = Page(items=(SEARCH_TOOL, CALL_TOOL))


class ToolSearchError(ValueError):
    """Arguments of search_tools or call_tool that are not what their schemas say."""


def search_result(index: ToolIndex, arguments: Mapping[str, Any], allowed: Iterable[str] | None) -> CallToolResult:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolSearchError('"query" must be a non-empty string')
    if len(query) > MAX_QUERY_CHARS:
        raise ToolSearchError(f'"query" is longer than {MAX_QUERY_CHARS} characters')
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ToolSearchError(f'"limit" must be an integer from 1 to {MAX_LIMIT}')
    found = []
    for hit in index.search(query, limit, allowed):
        tool = index.tools[hit.name]
        described: dict[str, Any] = {"name": tool.name}
        if tool.title:
            described["title"] = tool.title
        if tool.description:
            described["description"] = tool.description[:DESCRIPTION_CHARS]
        described["inputSchema"] = tool.input_schema
        found.append(described)
    structured = {"tools": found}
    return CallToolResult(content=(TextContent(text=orjson.dumps(structured).decode()),), structured_content=structured)


def call_target(arguments: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The tool call_tool names, and its arguments."""
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        raise ToolSearchError('"name" must be the name of a tool (search_tools finds them)')
    inner = arguments.get("arguments", {})
    if not isinstance(inner, dict):
        raise ToolSearchError('"arguments" must be an object')
    return name, inner
