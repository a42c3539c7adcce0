"""Declarative custom tools: one operation called with arguments templated from the tool's input.

A template value that is exactly `${path.to.input}` is replaced by that input value, keeping its JSON
type (a number stays a number, an object stays an object); a placeholder the input does not provide
removes its key, so the target's own defaults apply. Anything else (literals, strings that merely
contain `${`, lists) passes through unchanged, and nested maps are templated recursively. The
template is compiled once, so a call only walks it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_WHOLE = re.compile(r"^\$\{\s*([A-Za-z0-9_.\-]+)\s*\}$")


class _Missing:
    __slots__ = ()


_MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class _Placeholder:
    path: tuple[str, ...]

    def resolve(self, values: Mapping[str, Any]) -> Any:
        current: Any = values
        for step in self.path:
            if not isinstance(current, Mapping) or step not in current:
                return _MISSING
            current = current[step]
        return current


def placeholder_path(value: Any) -> tuple[str, ...] | None:
    """The input path a whole-scalar placeholder names (`${a.b}` → ("a", "b")), else None."""
    if not isinstance(value, str):
        return None
    found = _WHOLE.match(value)
    return tuple(found.group(1).split(".")) if found else None


def _compile(template: Any) -> Any:
    if isinstance(template, Mapping):
        return {key: _compile(value) for key, value in template.items()}
    path = placeholder_path(template)
    return _Placeholder(path) if path is not None else template


def _render(compiled: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(compiled, _Placeholder):
        return compiled.resolve(values)
    if isinstance(compiled, dict):
        rendered = {}
        for key, part in compiled.items():
            value = _render(part, values)
            if value is not _MISSING:
                rendered[key] = value
        return rendered
    return compiled


@dataclass(frozen=True, slots=True)
class ArgumentTemplate:
    """The `arguments` of a declarative custom tool, compiled."""

    compiled: Mapping[str, Any]

    @classmethod
    def compile(cls, arguments: Mapping[str, Any]) -> ArgumentTemplate:
        return cls(_compile(arguments))

    def render(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The target's arguments for a call with `values`."""
        rendered = _render(self.compiled, values)
        assert isinstance(rendered, dict)
        return rendered
