"""What each listing mode costs a model's context: the listing it reads once, and the answers it reads per step
(a search's hits, a tool's definition), in bytes of JSON and, with a token counter, in tokens."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from apimcp.codemode.limits import DEFAULT_LIMITS
from apimcp.codemode.mode import code_mode_page
from apimcp.codemode.typescript import declarations
from apimcp.findability.tokens import TokenCounter
from apimcp.protocol import dialects
from apimcp.protocol.models import CallToolResult, Page, TextContent, Tool
from apimcp.protocol.versions import V2026_07_28
from apimcp.toolsearch.describe import definitions_result


def _listing(page: Page[Tool]) -> str:
    """`tools/list` of the newest revision, as its result's JSON."""
    return orjson.dumps(dialects.tools_page(page, V2026_07_28)).decode()


def answer_text(result: CallToolResult) -> str:
    """What a client hands a model of a tool's result: its text."""
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _measure(texts: Iterable[str], counter: TokenCounter | None) -> dict[str, Any]:
    """The median bytes (and tokens) of `texts`."""
    texts = list(texts)
    if not texts:
        return {"bytes": 0, "tokens": 0 if counter else None}
    return {
        "bytes": round(statistics.median(len(text.encode()) for text in texts)),
        "tokens": round(statistics.median(counter.count(text) for text in texts)) if counter else None,
    }


def costs(
    tools: Sequence[Tool], search_page: Page[Tool], hits: Sequence[str], counter: TokenCounter | None
) -> dict[str, Any]:
    """Each mode's listing, and the median answer of each step: `hits` are search_tools answers' texts."""
    described = [answer_text(definitions_result([tool])) for tool in tools]
    declared = [
        answer_text(definitions_result([tool], schemas=False, typescript=declarations([tool]))) for tool in tools
    ]
    return {
        "every_tool": {"listing": _measure([_listing(Page(items=tuple(tools)))], counter)},
        "search": {
            "listing": _measure([_listing(search_page)], counter),
            "search_tools": _measure(hits, counter),
            "describe_one_tool": _measure(described, counter),
        },
        "code_mode": {
            "listing": _measure([_listing(code_mode_page(search_page, DEFAULT_LIMITS, read_only=False))], counter),
            "search_tools": _measure(hits, counter),
            "describe_one_tool": _measure(declared, counter),
        },
    }
