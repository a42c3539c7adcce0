"""Structured content already serialized (`RawJson`) reaches the wire as its parsed value would, unparsed."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apimcp.protocol import dialects
from apimcp.protocol.models import CallToolResult, RawJson, TextContent
from apimcp.protocol.versions import ALL_REVISIONS, Revision

VALUES: list[Any] = [
    {"items": [{"id": 1, "name": 'é \u2028 "quoted"'}], "total": 1},
    [1, 2.5, None, "x"],
    "a string",
    0,
    None,
]


def wire(result: CallToolResult, rev: Revision) -> bytes:
    return orjson.dumps(dialects.call_tool_result(result, rev))


@pytest.mark.parametrize("rev", ALL_REVISIONS, ids=lambda rev: rev.version)
@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("with_text", [True, False])
def test_raw_structured_content_is_shaped_byte_for_byte_as_its_parsed_value(
    rev: Revision, value: Any, with_text: bool
) -> None:
    text = (TextContent(text=orjson.dumps(value).decode()),) if with_text else ()
    parsed = CallToolResult(content=text, structured_content=value)
    raw = CallToolResult(content=text, structured_content=RawJson(data=orjson.dumps(value)))
    assert wire(raw, rev) == wire(parsed, rev)


def test_raw_json_knows_an_object_by_its_first_non_blank_byte() -> None:
    assert RawJson(data=b' \n\t{"a": 1}').is_object
    assert not RawJson(data=b"[{}]").is_object
    assert not RawJson(data=b'"{"').is_object
