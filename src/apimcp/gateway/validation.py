"""Argument validation against a tool's input schema, with messages that name the field."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from apimcp.safety.schema_compiling import SchemaProblem, compiled

MAX_REPORTED_ERRORS = 5


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


class ArgumentValidator:
    """Compiled on first use (an exposition may have a thousand tools, most never called)."""

    __slots__ = ("_schema", "_serialized", "_validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = schema
        self._validator: Any = None
        self._serialized: tuple[str, bytes] | None = None

    @property
    def serialized(self) -> tuple[str, bytes]:
        """(digest, JSON) of the schema, made once: how a shaping process gets it, and knows it again."""
        if self._serialized is None:
            text = orjson.dumps(self._schema, default=_plain, option=orjson.OPT_SORT_KEYS)
            self._serialized = (hashlib.sha256(text).hexdigest(), text)
        return self._serialized

    def problems(self, value: Any, *, quoting: bool = True) -> list[str]:
        """Human-readable validation errors, empty when the value conforms. Without `quoting`, a message names the
        place and the schema's keyword, never the value found there (an answer's values may be masked or redacted
        by policy, and a message quoting them would give them away)."""
        if self._validator is None:
            try:
                self._validator = compiled(self._schema)
            except SchemaProblem as problem:  # checked at import; a last guard, remembered
                self._validator = _Uncompilable(str(problem))
        if isinstance(self._validator, _Uncompilable):
            return [f"the tool's schema does not compile: {self._validator.problem}"]
        if self._validator.is_valid(value):
            return []
        problems = []
        for error in self._validator.iter_errors(value):
            path = "/".join(str(p) for p in error.instance_path)
            where = path or ("(arguments)" if quoting else "(answer)")
            problems.append(f"{where}: {error.message if quoting else _unquoted(error)}")
            if len(problems) == MAX_REPORTED_ERRORS:
                break
        return problems


@dataclass(frozen=True, slots=True)
class _Uncompilable:
    problem: str


def _unquoted(error: Any) -> str:
    """What `error` says without the value it is about."""
    keyword = str(error.schema_path[-1]) if error.schema_path else "schema"
    if keyword == "required":  # the message names the schema's property, not a value
        return str(error.message)
    return f'does not match the schema\'s "{keyword}"'
