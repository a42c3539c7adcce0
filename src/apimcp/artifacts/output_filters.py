"""Output filters (ToolsOutputFilters, reShapr's format): shrink a tool's result before the agent reads it.

A filter spec is a mapping with any of `jsonRetain` (JSON Pointers, see `json_retain`), `jsonPatches`
(RFC 6902 operations, applied in order, see `json_patch`) and `convertToToon` (the text becomes TOON).
The steps run in that order on the result's JSON: its structured content when it has some, else its
first content block parsed as JSON. Everything is compiled by `from_spec`, so a call only walks and
serializes; no step copies the whole document, and what patches add is bounded (`max_added_bytes`),
so a filter's work and its result stay proportional to the answer it filters.

Filtering fails open: a result that is not JSON, or any step that fails (a patch whose `test` does not
hold, a path a patch does not find, patches that would add more than their budget...), gives back the
original result with a warning that names the step but never the content; so does TOON text that would
be far larger than the JSON (`toon_output`: deep answers grow with their depth). A filter shrinks what the
agent reads; it is not a security boundary.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from apimcp.artifacts.errors import PlaceError, pointer_segments
from apimcp.artifacts.json_patch import Patch, PatchFailed
from apimcp.artifacts.json_retain import NotRetainable, Retention, TooManyBranches
from apimcp.artifacts.toon_output import ToonTooLarge, toon_text
from apimcp.protocol.models import NO_VALUE, CallToolResult, ContentBlock, RawJson, TextContent
from apimcp.safety.json_parsing import parse_json

log = logging.getLogger("apimcp.artifacts")
NO_PATCH: Final = Patch()

_KEYS = ("jsonRetain", "jsonPatches", "convertToToon")
MAX_RETAINED_POINTERS: Final = 100
DEFAULT_MAX_ADDED_BYTES: Final = 1024 * 1024
"""What a filter's patches may add to one result, about as JSON bytes (`FilterLimits.max_added_bytes`)."""


class FilterError(PlaceError):
    """A filter spec that cannot be compiled: `where` is the place in the spec (key, index, field), `problem`
    what is wrong there; the message names both (`jsonPatches[2].from: ...`)."""

    def __str__(self) -> str:
        place = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in self.where).lstrip(".")
        return f"{place}: {self.problem}" if place else self.problem


class FilterFailed(Exception):
    """A step that failed on one result; the message is safe to log (it holds no content)."""


@dataclass(frozen=True, slots=True)
class OutputFilter:
    """One tool's compiled output filter; build it with `from_spec`."""

    retain: Retention | None = None
    patch: Patch = NO_PATCH
    to_toon: bool = False
    tool: str = ""
    """Named in warnings only."""
    max_added_bytes: int = DEFAULT_MAX_ADDED_BYTES
    spec: bytes = b"{}"
    """The spec it was compiled from, as JSON: how a shaping process compiles the same filter."""

    @classmethod
    def from_spec(
        cls, spec: Mapping[str, Any], *, tool: str = "", max_added_bytes: int = DEFAULT_MAX_ADDED_BYTES
    ) -> OutputFilter:
        """Compile a spec, or raise FilterError. An empty `jsonRetain` or `jsonPatches` list does nothing,
        and a `""` pointer keeps everything (RFC 6901: it is the whole document). The same checks refuse a
        file when it is attached (`rules`)."""
        if not isinstance(spec, Mapping):
            raise FilterError((), f"an output filter is a mapping with any of {', '.join(_KEYS)}")
        unknown = sorted(str(key) for key in spec if key not in _KEYS)
        if unknown:
            raise FilterError((), f"unknown output filter key(s) {', '.join(unknown)}: expected {', '.join(_KEYS)}")
        toon = spec.get("convertToToon")
        if toon is not None and not isinstance(toon, bool):
            raise FilterError(("convertToToon",), f"convertToToon must be true or false, not {toon!r}")
        patches = spec.get("jsonPatches")
        try:
            patch = Patch.compile(patches if patches is not None else ())
        except PlaceError as exc:
            raise FilterError(("jsonPatches", *exc.where), exc.problem) from None
        try:
            serialized = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            raise FilterError((), "an output filter holds only JSON values") from None
        return cls(
            retain=_compile_retain(spec.get("jsonRetain")),
            patch=patch,
            to_toon=bool(toon),
            tool=tool,
            max_added_bytes=max_added_bytes,
            spec=serialized,
        )

    @property
    def digest(self) -> str:
        """Names this filter (its spec and limit) to a shaping process that compiled it already."""
        return hashlib.sha256(b"%d:" % self.max_added_bytes + self.spec).hexdigest()

    @property
    def does_nothing(self) -> bool:
        return self.retain is None and not self.patch.operations and not self.to_toon

    def apply(self, result: CallToolResult) -> CallToolResult:
        """The filtered result; the original one when it is an error, not JSON, or a step fails."""
        if result.is_error or self.does_nothing:
            return result
        try:
            value, text = self.shape(self._value_of(result))
        except FilterFailed as failure:
            return self.unapplied(result, str(failure))
        except Exception as exc:  # fail open: the agent gets the unfiltered answer rather than none
            return self.unapplied(result, f"{type(exc).__name__} while filtering")
        return self.rebuilt(result, text, value)

    def unapplied(self, result: CallToolResult, reason: str) -> CallToolResult:
        """`result` as it was, with a warning saying why the filter could not apply."""
        log.warning("output filter%s not applied: %s; the result passes unfiltered", self._of_tool, reason)
        return result

    @property
    def _of_tool(self) -> str:
        return f" of tool {self.tool!r}" if self.tool else ""

    def output_schema(self, schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The output schema of the filtered tool: what every filtered result validates against.

        Retention prunes the schema (None where it cannot be followed precisely); patches can make
        anything of a result, so with them there is no schema. TOON changes only the text, never the
        structured content, so it keeps the schema. A failed filter returns the original result, which
        the pruned schema accepts too: pruning only removes constraints.
        """
        if schema is None or self.patch.operations:
            return None
        if self.retain is None:
            return schema
        return self.retain.schema(schema)

    @staticmethod
    def _value_of(result: CallToolResult) -> Any:
        """What the filter works on: the structured content, else the first content block parsed as JSON."""
        structured = result.structured_content
        if isinstance(structured, RawJson):
            return parse_json(structured.data)
        if structured is not NO_VALUE:
            return structured  # never changed: retention shares it, patches copy what they change
        first = result.content[0] if result.content else None
        if not isinstance(first, TextContent):
            raise FilterFailed("the result has no structured content and does not start with text")
        try:
            return parse_json(first.text)
        except orjson.JSONDecodeError:
            raise FilterFailed("the result is not JSON") from None

    def shape(self, value: Any) -> tuple[Any, str]:
        """The filtered value and its text; raises FilterFailed naming the step that failed."""
        if self.retain is not None:
            try:
                value = self.retain.apply(value)
            except NotRetainable as exc:
                raise FilterFailed(f"jsonRetain: {exc}") from None
        if self.patch.operations:
            try:
                value = self.patch.apply(value, self.max_added_bytes)
            except PatchFailed as failure:  # its message names the operation, never the document
                raise FilterFailed(f"jsonPatches{failure}") from None
        if not self.to_toon:
            return value, orjson.dumps(value).decode()
        try:
            return value, toon_text(value)
        except ToonTooLarge as exc:
            raise FilterFailed(f"convertToToon: {exc}") from None

    @staticmethod
    def rebuilt(result: CallToolResult, text: str, value: Any) -> CallToolResult:
        """`result` filtered: `text` in place of its text, and `value` (a JSON value or a RawJson) as its structured
        content, if it had some."""
        content = result.content
        if result.structured_content is NO_VALUE:
            return CallToolResult(content=(_retexted(content[0], text), *content[1:]), meta=result.meta)
        return CallToolResult(content=_with_text(content, text), structured_content=value, meta=result.meta)


def _retexted(block: ContentBlock, text: str) -> TextContent:
    if isinstance(block, TextContent):
        return TextContent(text=text, annotations=block.annotations, meta=block.meta)
    return TextContent(text=text)


def _with_text(content: Sequence[ContentBlock], text: str) -> tuple[ContentBlock, ...]:
    """`content` with its first text block (the serialized structured content) replaced, or text first."""
    for index, block in enumerate(content):
        if isinstance(block, TextContent):
            return (*content[:index], _retexted(block, text), *content[index + 1 :])
    return (TextContent(text=text), *content)


def _compile_retain(spec: object) -> Retention | None:
    if spec is None:
        return None
    if isinstance(spec, str | bytes) or not isinstance(spec, Sequence):
        raise FilterError(("jsonRetain",), f"jsonRetain must be a list, not {type(spec).__name__}")
    if len(spec) > MAX_RETAINED_POINTERS:
        raise FilterError(("jsonRetain",), f"at most {MAX_RETAINED_POINTERS} pointers, not {len(spec)}")
    try:
        pointers = [pointer_segments(pointer, ("jsonRetain", index)) for index, pointer in enumerate(spec)]
    except PlaceError as exc:
        raise FilterError(exc.where, exc.problem) from None
    if not pointers:
        return None
    try:
        retention = Retention.from_segments(pointers)
    except TooManyBranches as exc:
        raise FilterError(("jsonRetain",), str(exc)) from None
    return None if retention.keeps_everything else retention
