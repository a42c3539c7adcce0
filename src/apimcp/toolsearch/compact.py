"""A search hit as search_tools answers it: what a model needs to choose a tool, in a few dozen bytes.

`{"name", "title", "summary", "parameters"}`: the summary is the description's first sentence on one line
(Markdown links, emphasis and line breaks gone, at most `SUMMARY_CHARS`), past a first paragraph that is the
title, and left out when it only repeats the title; `parameters` are the names of the input schema's
top-level properties, required ones first and marked with a trailing `*`. The full schemas are
describe_tools's answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apimcp.protocol.models import Tool

SUMMARY_CHARS = 160
MAX_PARAMETERS = 24
"""Optional parameters listed at most (required ones always are); `moreParameters` counts the others."""
REQUIRED_MARK = "*"

READ_CHARS = 2000
"""Characters of a description the summary is looked for in: it keeps `SUMMARY_CHARS` of its first sentence, and
a description may be megabytes (the patterns below must not meet them all)."""
_LINK = re.compile(r"!?\[([^\]\n]{0,300})\]\([^)\n]{0,1000}\)")  # [text](url) and images: their text
_ADMONITION = re.compile(r"\[!\w+\]")  # GitHub's `> [!NOTE]`
_HTML = re.compile(r"<[^>\n]{1,200}>")
_LINE_MARK = re.compile(r"^[ \t]*(?:(?:#{1,6}|[-*+]|\d{1,3}[.)])[ \t]+|>[> \t]*)", re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__")
_SPACES = re.compile(r"\s+")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z(\"'`\[]|$)")  # "e.g. the" goes on: a lower-case word follows


def summary(description: str, title: str | None = None) -> str:
    """The first sentence of `description` as one line of plain text, bounded; a first paragraph that only
    repeats `title` is skipped (importers put an OpenAPI summary, the tool's title, before its description)."""
    text = ""
    for paragraph in _PARAGRAPH.split(description[:READ_CHARS]):  # the first that says something, read no further
        text = _HTML.sub("", _ADMONITION.sub("", _LINK.sub(r"\1", paragraph)))
        text = _SPACES.sub(" ", _EMPHASIS.sub("", _LINE_MARK.sub("", text))).strip()
        if text and not (title and _same(text, title)):
            break
        text = ""
    end = _SENTENCE_END.search(text)
    if end is not None:
        text = text[: end.end()]
    if title and _same(text, title):
        return ""
    if len(text) <= SUMMARY_CHARS:
        return text
    cut = text[: SUMMARY_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def _same(text: str, title: str) -> bool:
    return text.rstrip(".").casefold() == title.rstrip(".").casefold()


def parameters(schema: Mapping[str, Any]) -> tuple[list[str], int]:
    """The input schema's top-level property names, required ones first with `*`; and how many optional
    ones are left out beyond `MAX_PARAMETERS`."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return [], 0
    raw_required = schema.get("required")
    required = {r for r in raw_required if isinstance(r, str)} if isinstance(raw_required, list) else set()
    names = [str(name) for name in properties]
    listed = [name + REQUIRED_MARK for name in names if name in required]
    optional = [name for name in names if name not in required]
    listed.extend(optional[:MAX_PARAMETERS])
    return listed, max(0, len(optional) - MAX_PARAMETERS)


def compact_hit(tool: Tool) -> dict[str, Any]:
    hit: dict[str, Any] = {"name": tool.name}
    if tool.title:
        hit["title"] = tool.title
    line = summary(tool.description, tool.title) if tool.description else ""
    if line:
        hit["summary"] = line
    names, more = parameters(tool.input_schema)
    if names:
        hit["parameters"] = names
    if more:
        hit["moreParameters"] = more
    return hit


class CompactHits:
    """Each tool's hit, made the first time a search returns the tool and kept: hits are the same for every
    caller, so a search looks them up (at most one per tool of the exposition, about 200 bytes each)."""

    __slots__ = ("_made", "_tools")

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        self._tools = tools
        self._made: dict[str, Mapping[str, Any]] = {}

    def __getitem__(self, name: str) -> Mapping[str, Any]:
        hit = self._made.get(name)
        if hit is None:
            hit = self._made[name] = compact_hit(self._tools[name])
        return hit
