"""Keyword values as JSON Schema 2020-12 accepts them, checked one keyword at a time.

Descriptions hold mistakes a strict validator refuses (`pattern: 0`, `minLength: "5"`, a regex
that does not compile, `type: int`). Copied into a tool's schema, one such value makes the whole
tools/list invalid and every call of the tool fail. So each keyword that holds a value (not a
subschema) is checked on its own against the 2020-12 meta-schema, and patterns are compiled with the
engine the gateway validates with. A value that fails is repaired when the intent is unambiguous
(`"5"` → 5, `"true"` → true, `int` → integer, duplicates removed), else dropped; either way the
caller reports it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import jsonschema_rs
import orjson

_NUMBER = re.compile(r"^\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*$")
_NUMERIC = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
)
_BOOLEANS = frozenset({"uniqueItems", "readOnly", "writeOnly", "deprecated"})
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_TYPE_ALIASES = {"int": "integer", "long": "integer", "float": "number", "double": "number", "bool": "boolean"}
_COMPILED = frozenset({"pattern"})
"""Keywords whose value the meta-schema accepts as any string but the validator must compile."""
_UNSUPPORTED = frozenset({"$dynamicRef", "$recursiveRef"})
"""References resolved at validation time, outside the definitions a tool schema carries."""
_MAX_SHOWN = 60
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "example", "$comment"})
"""Keywords whose values are prose or data, distinct nearly every time: checked, never cached."""
_MAX_CACHED_CHARS = 256
"""The longest keyword or string value cached: the cache lives as long as the process and serves every
import, so it must hold only what recurs (`type: string`, short patterns), never a description's bulk."""
_CACHE_ENTRIES = 4096


def problem(keyword: str, value: Any) -> str | None:
    """Why `keyword: value` is not valid JSON Schema 2020-12 (or does not compile); None when it is."""
    if keyword in _ANNOTATIONS or len(keyword) > _MAX_CACHED_CHARS:
        return _problem(keyword, value)
    if (isinstance(value, str) and len(value) <= _MAX_CACHED_CHARS) or value is None or isinstance(value, int | float):
        # The type is part of the key: 1 == True, yet only one of them is a valid `uniqueItems`.
        return _cached_problem(keyword, type(value).__name__, value)
    return _problem(keyword, value)


@functools.lru_cache(maxsize=_CACHE_ENTRIES)  # thread-safe: imports run on several worker threads at once
def _cached_problem(keyword: str, kind: str, value: Any) -> str | None:
    return _problem(keyword, value)


def _problem(keyword: str, value: Any) -> str | None:
    if keyword in _UNSUPPORTED:
        return "dynamic references are not supported"
    schema = {keyword: value}
    # The meta-schema is quick to check; compiling also tries the regex engine, which it does not.
    check: Callable[[Any], Any] = (
        jsonschema_rs.Draft202012Validator if keyword in _COMPILED else jsonschema_rs.meta.validate
    )
    try:
        check(schema)
    except jsonschema_rs.ValidationError as exc:
        return exc.message.splitlines()[0]
    except (ValueError, TypeError, OverflowError) as exc:  # not JSON at all (a YAML set, bytes...)
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why a regular expression (a `patternProperties` name) does not compile; None when it does."""
    return problem("pattern", pattern)


def repaired(keyword: str, value: Any) -> Any | None:
    """The value the description evidently meant, when a wrong one has only one reading; else None."""
    if keyword in _NUMERIC and isinstance(value, str) and _NUMBER.match(value):
        number = float(value)
        return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
    if keyword in _COUNTS and isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if keyword in _BOOLEANS and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if keyword == "type":
        return _type(value)
    if keyword == "required":
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            names = list(dict.fromkeys(name for name in value if isinstance(name, str)))
            return names or None
    return None


def _type(value: Any) -> Any | None:
    if isinstance(value, str):
        lowered = value.strip().lower()
        name = _TYPE_ALIASES.get(lowered, lowered)
        return name if name in _TYPES else None
    if isinstance(value, list):
        names = [_type(v) if isinstance(v, str) else None for v in value]
        if not names or None in names:
            return None  # an unknown name among them: dropping it would change the meaning
        unique = list(dict.fromkeys(names))
        return unique if len(unique) > 1 else unique[0]
    return None


def shown(value: Any) -> str:
    """A value as a message quotes it, cut short."""
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a JSON value nests more than `limit` levels of arrays and objects (walked without recursion)."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        current, level = pending.pop()
        if isinstance(current, dict | list):
            if level >= limit:
                return True
            children = current.values() if isinstance(current, dict) else current
            pending.extend((child, level + 1) for child in children)
    return False
