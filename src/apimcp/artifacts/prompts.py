"""Prompts declared in artifact files: prompts/list, prompts/get and their completions.

A prompt's `result` is text with `${argument}` placeholders. It is split once, when the catalog is
built, into literal pieces and argument references, so rendering never rescans what it inserted: a
value that contains `${other}` reaches the model as typed. A placeholder naming no declared argument
stays literal text, and arguments a prompt does not declare are ignored, as reShapr does, so a client
sending extra context still gets its prompt. A missing optional argument renders as an empty string.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimcp.protocol.errors import invalid_params
from apimcp.protocol.models import (
    Completion,
    GetPromptResult,
    Page,
    Prompt,
    PromptArgument,
    PromptMessage,
    TextContent,
)

__all__ = ["MAX_COMPLETIONS", "PromptCatalog", "complete_values", "placeholder_names"]

MAX_COMPLETIONS = 100
"""MCP caps completion/complete at 100 values; `total` and `hasMore` say what was left out."""

_PLACEHOLDER = re.compile(r"\$\{\s*([^{}\s]+)\s*\}")


def placeholder_names(result: str) -> tuple[str, ...]:
    """The argument names `result` refers to, in order, as rendering reads them (for validation)."""
    return tuple(found.group(1) for found in _PLACEHOLDER.finditer(result))


def complete_values(candidates: Sequence[str], value: str) -> Completion:
    """The candidates starting with `value`, ignoring case, at most MAX_COMPLETIONS of them."""
    wanted = value.casefold()
    found = [candidate for candidate in candidates if candidate.casefold().startswith(wanted)]
    return Completion(values=tuple(found[:MAX_COMPLETIONS]), total=len(found), has_more=len(found) > MAX_COMPLETIONS)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class _Entry:
    prompt: Prompt
    pieces: tuple[tuple[str, str | None], ...]
    """(literal text, the argument rendered after it or None)."""
    candidates: Mapping[str, tuple[str, ...]]

    def render(self, arguments: Mapping[str, str]) -> str:
        return "".join(text + (arguments.get(name, "") if name is not None else "") for text, name in self.pieces)


def _compile(result: str, declared: set[str]) -> tuple[tuple[str, str | None], ...]:
    pieces: list[tuple[str, str | None]] = []
    start = 0
    for found in _PLACEHOLDER.finditer(result):
        name = found.group(1)
        if name in declared:
            pieces.append((result[start : found.start()], name))
            start = found.end()
    pieces.append((result[start:], None))
    return tuple(pieces)


def _entry(name: str, spec: Mapping[str, Any]) -> _Entry:
    arguments = [a for a in spec.get("arguments") or () if isinstance(a, Mapping) and a.get("name")]
    definition = Prompt(
        name=name,
        title=_text(spec.get("title")),
        description=_text(spec.get("description")),
        arguments=tuple(
            PromptArgument(
                name=str(a["name"]),
                title=_text(a.get("title")),
                description=_text(a.get("description")),
                required=bool(a.get("required", False)),
            )
            for a in arguments
        ),
    )
    declared = {argument.name for argument in definition.arguments}
    candidates = {str(a["name"]): tuple(str(v) for v in a["values"]) for a in arguments if a.get("values")}
    return _Entry(definition, _compile(str(spec.get("result") or ""), declared), candidates)


class PromptCatalog:
    """The `prompts` section of an exposition's artifacts, compiled once and kept in declaration order."""

    def __init__(self, prompts: Mapping[str, Mapping[str, Any]]) -> None:
        self._entries = {str(name): _entry(str(name), spec) for name, spec in prompts.items()}
        self.page: Page[Prompt] = Page(items=tuple(entry.prompt for entry in self._entries.values()))

    @property
    def has_prompts(self) -> bool:
        return bool(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def _find(self, name: str, field: str) -> _Entry:
        entry = self._entries.get(name)
        if entry is None:
            raise invalid_params(f"Unknown prompt: {name}", {"field": field, "prompt": name})
        return entry

    def get(self, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        """One user message: the prompt's `result` with its arguments substituted."""
        entry = self._find(name, "name")
        for argument in entry.prompt.arguments:
            if argument.required and argument.name not in arguments:
                raise invalid_params(
                    f"Prompt {name} needs the argument {argument.name}", {"prompt": name, "argument": argument.name}
                )
        message = PromptMessage(role="user", content=TextContent(text=entry.render(arguments)))
        return GetPromptResult(messages=(message,), description=entry.prompt.description)

    def complete(self, name: str, argument: str, value: str) -> Completion:
        """Declared `values` of the argument that start with `value`; none for an argument without any."""
        return complete_values(self._find(name, "ref").candidates.get(argument, ()), value)
