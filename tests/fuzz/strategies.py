"""Value strategies shared by the fuzz tests: any JSON, very deep JSON, and JSON that fits a schema."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([orjson.Fragment(b"123456789012345678901234567890"), orjson.Fragment(b"1e400")])
    | st.text(max_size=40)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)


def nested(depth: int) -> orjson.Fragment:
    """JSON nested `depth` levels deep, objects and arrays in turn (already encoded: orjson stops at 255)."""
    opening = b"".join(b'{"a":' if level % 2 else b"[" for level in range(depth))
    closing = b"".join(b"}" if level % 2 else b"]" for level in reversed(range(depth)))
    return orjson.Fragment(opening + b"0" + closing)


deep = st.one_of(st.integers(min_value=1, max_value=300), st.integers(min_value=200, max_value=5000)).map(nested)


def conforming(schema: Any, defs: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that (mostly) satisfy a JSON schema: the keywords apimcp's and FastAPI's schemas use, with
    references (to `defs`, by their last segment) followed a few levels deep. Close enough is fine: the
    server must cope either way. (hypothesis-jsonschema no longer runs on current Hypothesis.)"""
    if not isinstance(schema, dict) or depth > 4:
        return values
    reference = schema.get("$ref")
    if isinstance(reference, str):
        target = defs.get(reference.rsplit("/", 1)[-1])
        return conforming(target, defs, depth + 1) if target is not None and depth < 3 else st.just({})
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for combinator in ("oneOf", "anyOf"):
        if combinator in schema:
            return st.one_of([conforming(option, defs, depth + 1) for option in schema[combinator]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([conforming({**schema, "type": k}, defs, depth) for k in kind])
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = [name for name in schema.get("required", []) if name in properties]
        optional = [name for name in properties if name not in required]
        return st.fixed_dictionaries(
            {name: conforming(properties[name], defs, depth + 1) for name in required},
            optional={name: conforming(properties[name], defs, depth + 1) for name in optional},
        )
    if kind == "array":
        return st.lists(conforming(schema.get("items", {}), defs, depth + 1), max_size=3)
    if kind == "integer":
        return st.integers(min_value=-(2**63), max_value=2**63)
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "string":
        return st.text(max_size=30)
    return values


def wide_integers_kept(value: Any) -> Any:
    """`value` with integers beyond 64 bits as pre-encoded JSON (orjson encodes no wider integers)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return orjson.Fragment(str(value).encode())
    if isinstance(value, list):
        return [wide_integers_kept(item) for item in value]
    if isinstance(value, dict):
        return {key: wide_integers_kept(item) for key, item in value.items()}
    return value
