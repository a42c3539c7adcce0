"""The tools an exposition with tool search lists: `search_tools` (compact hits: `compact.py`, narrowed by
`facets.py`), `describe_tools` (full definitions: `describe.py`) and `call_tool` (any allowed tool by name,
validated and guarded as a direct call would be)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

import orjson

from apimcp.protocol.models import CallToolResult, Page, TextContent, Tool, ToolAnnotations
from apimcp.toolsearch.compact import CompactHits, compact_hit
from apimcp.toolsearch.describe import DESCRIBE, DESCRIBE_TOOL
from apimcp.toolsearch.errors import ToolSearchError
from apimcp.toolsearch.facets import Facets
from apimcp.toolsearch.index import ToolIndex

__all__ = [
    "CALL", "CALL_TOOL", "DESCRIBE", "DESCRIBE_TOOL", "NAMES", "SEARCH", "SEARCH_PAGE", "SEARCH_TOOL",
    "ToolSearchError", "call_target", "search_page", "search_result",
]  # fmt: skip

SEARCH = "search_tools"
CALL = "call_tool"
NAMES = frozenset({SEARCH, DESCRIBE, CALL})
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 1000
NO_FACETS = Facets.of((), {}, {})

SEARCH_TOOL = Tool(
    name=SEARCH,
    title="Find tools",
    description=(
        "Search this server's tools by what you want to do (plain words: 'merge a pull request'). Returns the "
        "best matches: name, title, summary and parameter names (* marks required ones). describe_tools gives "
        "their full schemas; call one with call_tool."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What you want to do", "maxLength": MAX_QUERY_CHARS},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "readOnly": {"type": "boolean", "description": "true: only tools that change nothing"},
            "tag": {"type": "string", "description": "Only tools with this tag of the API description"},
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
            "arguments": {
                "type": "object",
                "description": "The tool's arguments, as its input schema says (describe_tools)",
            },
        },
        "required": ["name"],
    },
)
SEARCH_PAGE: Page[Tool] = Page(items=(SEARCH_TOOL, DESCRIBE_TOOL, CALL_TOOL))
"""The listing of an exposition of one service."""


def search_page(services: Sequence[str]) -> Page[Tool]:
    """The listing of an exposition of these member services: with several, search_tools can keep to one."""
    if len(services) < 2:
        return SEARCH_PAGE
    schema = dict(SEARCH_TOOL.input_schema)
    service = {"type": "string", "enum": list(services), "description": "Only tools of this service"}
    schema["properties"] = {**schema["properties"], "service": service}
    return Page(items=(replace(SEARCH_TOOL, input_schema=schema), DESCRIBE_TOOL, CALL_TOOL))


def search_result(
    index: ToolIndex,
    arguments: Mapping[str, Any],
    allowed: Set[str] | None,
    facets: Facets | None = None,
    hits: CompactHits | None = None,
) -> CallToolResult:
    """The best hits for `arguments` (query, limit, filters) among the tools `allowed` (every one when None);
    `hits` keeps the exposition's hits once made."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolSearchError('"query" must be a non-empty string')
    if len(query) > MAX_QUERY_CHARS:
        raise ToolSearchError(f'"query" is longer than {MAX_QUERY_CHARS} characters')
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ToolSearchError(f'"limit" must be an integer from 1 to {MAX_LIMIT}')
    kept = (facets or NO_FACETS).narrowed(arguments, allowed)
    found = [
        hits[hit.name] if hits is not None else compact_hit(index.tools[hit.name])
        for hit in index.search(query, limit, kept)
    ]
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
