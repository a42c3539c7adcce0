"""Output filters (ToolsOutputFilters, reShapr's format): shrink a tool's result before the agent reads it.

A filter spec is a mapping with any of `jsonRetain` (JSON Pointers, see `json_retain`), `jsonPatches`
(RFC 6902 operations, applied in order) and `convertToToon` (the text becomes TOON). The steps run in
that order on the result's JSON: its structured content when it has some, else its first content block
parsed as JSON. Everything is compiled by `from_spec`, so a call only walks and serializes.

Filtering fails open: a result that is not JSON, or any step that fails (a patch whose `test` does not
hold, a path a patch does not find...), gives back the original result with a warning that names the
step but never the content. A filter shrinks what the agent reads; it is not a security boundary.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch
import orjson
import toon_format
from jsonpointer import JsonPointer

from apimcp.artifacts.json_retain import NotRetainable, PointerError, Retention, parse_pointer
from apimcp.protocol.models import NO_VALUE, CallToolResult, ContentBlock, TextContent

log = logging.getLogger("apimcp.artifacts")

_KEYS = ("jsonRetain", "jsonPatches", "convertToToon")
_NEEDS_VALUE = frozenset(("add", "replace", "test"))
_NEEDS_FROM = frozenset(("move", "copy"))


class FilterError(ValueError):
    """A filter spec that cannot be compiled; the message names the key and the entry at fault."""


class _Failed(Exception):
    """A step that failed on one result; the message is safe to log (it holds no content)."""


@dataclass(frozen=True, slots=True)
class OutputFilter:
    """One tool's compiled output filter; build it with `from_spec`."""

    retain: Retention | None = None
    patches: tuple[jsonpatch.PatchOperation, ...] = ()
    to_toon: bool = False
    tool: str = ""
    """Named in warnings only."""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], *, tool: str = "") -> OutputFilter:
        """Compile a spec, or raise FilterError. An empty `jsonRetain` or `jsonPatches` list does nothing,
        and a `""` pointer keeps everything (RFC 6901: it is the whole document)."""
        if not isinstance(spec, Mapping):
            raise FilterError(f"an output filter is a mapping with any of {', '.join(_KEYS)}")
        unknown = sorted(str(key) for key in spec if key not in _KEYS)
        if unknown:
            raise FilterError(f"unknown output filter key(s) {', '.join(unknown)}: expected {', '.join(_KEYS)}")
        toon = spec.get("convertToToon")
        if toon is not None and not isinstance(toon, bool):
            raise FilterError(f"convertToToon must be true or false, not {toon!r}")
        return cls(
            retain=_compile_retain(spec.get("jsonRetain")),
            patches=_compile_patches(spec.get("jsonPatches")),
            to_toon=bool(toon),
            tool=tool,
        )

    def apply(self, result: CallToolResult) -> CallToolResult:
        """The filtered result; the original one when it is an error, not JSON, or a step fails."""
        if result.is_error or (self.retain is None and not self.patches and not self.to_toon):
            return result
        try:
            return self._filtered(result)
        except _Failed as failure:
            reason = str(failure)
        except Exception as exc:  # fail open: the agent gets the unfiltered answer rather than none
            reason = f"{type(exc).__name__} while filtering"
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
        if schema is None or self.patches:
            return None
        if self.retain is None:
            return schema
        return self.retain.schema(schema)

    def _filtered(self, result: CallToolResult) -> CallToolResult:
        content = result.content
        structured = result.structured_content
        if structured is NO_VALUE:
            first = content[0] if content else None
            if not isinstance(first, TextContent):
                raise _Failed("the result has no structured content and does not start with text")
            try:
                value = orjson.loads(first.text)
            except orjson.JSONDecodeError:
                raise _Failed("the result is not JSON") from None
            owned = True
        else:
            value = structured
            owned = False  # the caller's structured content: patches must work on a copy
        if self.retain is not None:
            try:
                value = self.retain.apply(value)
            except NotRetainable as exc:
                raise _Failed(f"jsonRetain: {exc}") from None
        if self.patches:
            if not owned:
                value = orjson.loads(orjson.dumps(value))  # a deep copy, faster than copy.deepcopy
            for index, operation in enumerate(self.patches):
                try:
                    value = operation.apply(value)
                except Exception as exc:
                    # the exception's message may quote the document: only its type is told
                    op = operation.operation
                    raise _Failed(
                        f"jsonPatches[{index}] ({op['op']} {operation.location}) failed: {type(exc).__name__}"
                    ) from None
        text = toon_format.encode(value) if self.to_toon else orjson.dumps(value).decode()
        if structured is NO_VALUE:
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


def _entries(spec: object, key: str) -> Sequence[Any]:
    if spec is None:
        return ()
    if isinstance(spec, str | bytes) or not isinstance(spec, Sequence):
        raise FilterError(f"{key} must be a list, not {type(spec).__name__}")
    return spec


def _compile_retain(spec: object) -> Retention | None:
    pointers = []
    for index, pointer in enumerate(_entries(spec, "jsonRetain")):
        try:
            pointers.append(parse_pointer(pointer))
        except PointerError as exc:
            raise FilterError(f"jsonRetain[{index}]: {exc}: a JSON Pointer starts with '/' (or is '')") from None
    if not pointers:
        return None
    retention = Retention.from_segments(pointers)
    return None if retention.keeps_everything else retention


def _compile_patches(spec: object) -> tuple[jsonpatch.PatchOperation, ...]:
    """The operations, their pointers parsed once (jsonpatch.JsonPatch would rebuild them on every apply)."""
    compiled = []
    for index, operation in enumerate(_entries(spec, "jsonPatches")):
        where = f"jsonPatches[{index}]"
        if not isinstance(operation, Mapping):
            raise FilterError(f"{where} must be a mapping with op and path")
        name = operation.get("op")
        kind = jsonpatch.JsonPatch.operations.get(name) if isinstance(name, str) else None
        if kind is None:
            known = ", ".join(jsonpatch.JsonPatch.operations)
            raise FilterError(f"{where}: unknown op {name!r}: expected one of {known}")
        plain = dict(operation)
        plain["path"] = path = _pointer(operation.get("path"), f"{where}.path")
        if name in _NEEDS_VALUE and "value" not in operation:
            raise FilterError(f"{where}: the {name} operation needs a value")
        if name in _NEEDS_FROM:
            plain["from"] = source = _pointer(operation.get("from"), f"{where}.from")
            if name == "move" and path != source and path.contains(source):
                raise FilterError(f"{where}: cannot move {source.path!r} into its own child {path.path!r}")
        if name == "remove" and not path.parts:
            raise FilterError(f"{where}: cannot remove the whole document")
        compiled.append(kind(plain))
    return tuple(compiled)


def _pointer(value: object, where: str) -> JsonPointer:
    if value is None:
        raise FilterError(f"{where} is missing")
    try:
        parse_pointer(value)  # the same checks and messages as jsonRetain
    except PointerError as exc:
        raise FilterError(f"{where}: {exc}: a JSON Pointer starts with '/' (or is '')") from None
    return JsonPointer(str(value))
