"""Hiding fields of an answer, as `redact` rules ask: the value of every key named, at any depth, becomes
`"[redacted]"` in the structured content and in text blocks that hold JSON. A text block that is not JSON (an
error quoting a backend's answer, say) has the string, number and boolean values of those keys replaced where
it writes them as JSON does (`"email": "a@b.c"`); values that are objects or lists there are left as they are:
a guardrail on personal data is what catches free text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from apimcp.protocol.models import (
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    RawJson,
    TextContent,
    TextResourceContents,
)

REDACTED = "[redacted]"
_MAX_DEPTH = 64


def redact_result(result: CallToolResult, fields: Sequence[str]) -> CallToolResult:
    keys = frozenset(fields)
    if not keys:
        return result
    structured = result.structured_content
    if isinstance(structured, RawJson):
        structured = _redacted(orjson.loads(structured.data), keys, 0)
    elif isinstance(structured, dict | list):
        structured = _redacted(structured, keys, 0)
    pattern = _pattern(keys)
    content = tuple(_redacted_block(block, keys, pattern) for block in result.content)
    return replace(result, content=content, structured_content=structured)


def _redacted_block(block: ContentBlock, keys: frozenset[str], pattern: re.Pattern[str]) -> ContentBlock:
    """A text block's text, or an embedded text resource's (an MCP server's answer may carry one), redacted."""
    if isinstance(block, TextContent):
        return replace(block, text=_redacted_text(block.text, keys, pattern))
    if isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
        return replace(block, resource=replace(block.resource, text=_redacted_text(block.resource.text, keys, pattern)))
    return block


def _redacted(value: Any, keys: frozenset[str], depth: int) -> Any:
    if depth > _MAX_DEPTH:  # deeper than any answer the gateway lets through: hide it all rather than recurse
        return REDACTED
    if isinstance(value, dict):
        return {k: REDACTED if k in keys else _redacted(v, keys, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(item, keys, depth + 1) for item in value]
    return value


@functools.lru_cache(maxsize=64)
def _pattern(keys: frozenset[str]) -> re.Pattern[str]:
    """The pattern of `keys` written as JSON writes them (a policy's few field lists: made once each)."""
    names = "|".join(_spelled(key) for key in sorted(keys))
    return re.compile(r'"(?:' + names + r')"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null)')


def _spelled(key: str) -> str:
    """A pattern for `key` as JSON may write it: each character as it is or escaped (`\\u00e9`, as Python's json
    writes every non-ASCII one by default)."""
    parts = []
    for char in orjson.dumps(key).decode()[1:-1]:  # JSON's own escapes (quotes, control characters) as orjson writes
        escaped = "".join(f"\\u{unit:04x}" for unit in _utf16(char))
        parts.append(f"(?:{re.escape(char)}|(?i:{re.escape(escaped)}))" if char not in '\\"' else re.escape(char))
    return "".join(parts)


def _utf16(char: str) -> tuple[int, ...]:
    units = char.encode("utf-16-be")
    return tuple(int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2))


def _redacted_text(text: str, keys: frozenset[str], pattern: re.Pattern[str]) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            return orjson.dumps(_redacted(value, keys, 0)).decode()
    return pattern.sub(lambda match: match.group(0)[: match.start(1) - match.start(0)] + f'"{REDACTED}"', text)


def widened_schema(schema: Mapping[str, Any] | None, fields: Sequence[str]) -> Mapping[str, Any] | None:
    """`schema` (a tool's output schema) that also admits `"[redacted]"` for each property named in `fields`, so
    that clients checking structured content against it accept a redacted answer."""
    if schema is None or not fields:
        return schema
    widened: Mapping[str, Any] = _widened(schema, frozenset(fields), 0)
    return widened


def _widened(schema: Any, keys: frozenset[str], depth: int) -> Any:
    if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {
                name: _or_redacted(_widened(sub, keys, depth + 1)) if name in keys
                else _widened(sub, keys, depth + 1)
                for name, sub in value.items()
            }  # fmt: skip
        elif key == "patternProperties" and isinstance(value, Mapping):  # a named key may be any of these
            out[key] = {pattern: _or_redacted(_widened(sub, keys, depth + 1)) for pattern, sub in value.items()}
        elif key == "additionalProperties" and isinstance(value, Mapping):
            out[key] = _or_redacted(_widened(value, keys, depth + 1))
        elif isinstance(value, Mapping):
            out[key] = _widened(value, keys, depth + 1)
        elif isinstance(value, list):
            out[key] = [_widened(item, keys, depth + 1) for item in value]
        else:
            out[key] = value
    return out


def _or_redacted(schema: Any) -> dict[str, Any]:
    return {"anyOf": [schema, {"const": REDACTED}]}
