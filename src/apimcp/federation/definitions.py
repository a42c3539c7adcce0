"""An upstream MCP server's tool definitions as catalog operations.

A definition comes from a server the gateway does not control: every field is checked for its type and
bounded before it is kept, a tool whose name clients could not use is left out with a warning, and each kept
tool carries the sha256 of its definition as listed (canonical JSON), so that a changed definition is told
apart from the one imported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from apimcp.catalog.model import (
    DescriptionWarning,
    McpBinding,
    McpOfferings,
    Operation,
    ServerTemplate,
    Service,
    ToolHints,
)
from apimcp.catalog.naming import VALID_TOOL_NAME, fit
from apimcp.importers.errors import SpecError
from apimcp.safety.model_instructions import markers
from apimcp.safety.schema_compiling import compile_problem

MAX_TOOLS = 5_000
MAX_DEFINITION_BYTES = 256 * 1024
"""One tool's definition, as canonical JSON: larger ones are left out (a schema that large floods any model)."""
MAX_TEXT = 16 * 1024
"""A title or description is cut to this many characters."""

_EMPTY_INPUT: Mapping[str, Any] = {"type": "object", "properties": {}}


def digest(definition: Mapping[str, Any]) -> str:
    """sha256 of a definition as canonical JSON (keys sorted): the same definition always gives the same digest."""
    return hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest()


def upstream_service(
    name: str,
    version: str,
    url: str,
    tools: Sequence[object],
    *,
    description: str | None = None,
    tool_prefix: str = "",
    offerings: tuple[Sequence[object], Sequence[object], Sequence[object]] = ((), (), ()),
) -> Service:
    """The service of an upstream MCP server at `url` whose `tools/list` gave `tools` (every page); the gateway
    serves each tool as `tool_prefix` + its name (shortened with a hash past 64 characters). `offerings`: what its
    `prompts/list`, `resources/list` and `resources/templates/list` gave."""
    if len(tools) > MAX_TOOLS:
        raise SpecError(f"the server lists more than {MAX_TOOLS} tools", source=url)
    operations: list[Operation] = []
    warnings: list[DescriptionWarning] = []
    seen: set[str] = set()
    for index, raw in enumerate(tools):
        where = f"/tools/{index}"
        try:
            operation = operation_of(raw)
            if tool_prefix:
                operation = replace(operation, tool_name=fit(operation.tool_name, tool_prefix))
        except ValueError as exc:
            warnings.append(DescriptionWarning(where, f"left out: {exc}"))
            continue
        if operation.tool_name in seen:
            warnings.append(DescriptionWarning(where, f"left out: a second tool named {operation.tool_name!r}"))
            continue
        seen.add(operation.tool_name)
        operations.append(operation)
        flagged = poisoning_markers(raw)
        if flagged:
            warnings.append(
                DescriptionWarning(
                    where,
                    f"{operation.tool_name}: its definition holds {', '.join(flagged)}: read it before serving it",
                )
            )
    checked, offering_warnings = offerings_of(*offerings)
    return Service(
        name=name,
        version=version,
        operations=tuple(operations),
        description=description,
        servers=(ServerTemplate(url),),
        kind="mcp",
        warnings=(*warnings, *offering_warnings),
        offerings=checked,
    )


def poisoning_markers(raw: object) -> list[str]:
    """What a tool's definition holds that is aimed at the model (`safety.model_instructions`): in its title,
    description, and the descriptions and titles anywhere in its schemas (all its text, as the model reads it)."""
    # orjson writes characters beyond ASCII as they are: hidden ones stay visible to the scan
    return markers(orjson.dumps(raw).decode()) if isinstance(raw, Mapping) else []


def operation_of(raw: object) -> Operation:
    """One listed tool as an operation; ValueError says what is wrong with it."""
    if not isinstance(raw, Mapping):
        raise ValueError("a tool is not an object")
    name = raw.get("name")
    if not isinstance(name, str) or not VALID_TOOL_NAME.fullmatch(name):
        shown = name[:80] if isinstance(name, str) else type(name).__name__
        raise ValueError(f"its name {shown!r} is not 1 to 64 letters, digits, '_', '.' or '-'")
    size = len(_written(raw, name))
    if size > MAX_DEFINITION_BYTES:
        raise ValueError(f"{name}: its definition is {size} bytes, more than the {MAX_DEFINITION_BYTES} allowed")
    input_schema = raw.get("inputSchema", _EMPTY_INPUT)
    if not isinstance(input_schema, Mapping) or input_schema.get("type", "object") != "object":
        raise ValueError(f"{name}: its inputSchema is not a JSON Schema of an object")
    output_schema = raw.get("outputSchema")
    if output_schema is not None and (not isinstance(output_schema, Mapping) or output_schema.get("type") != "object"):
        raise ValueError(f"{name}: its outputSchema is not a JSON Schema of an object")
    for which, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        problem = compile_problem(schema) if schema is not None else None
        if problem is not None:
            raise ValueError(f"{name}: its {which} does not compile: {problem}")
    annotations = raw.get("annotations")
    annotations = annotations if isinstance(annotations, Mapping) else {}
    title = _text(raw.get("title")) or _text(annotations.get("title"))
    return Operation(
        tool_name=name,
        input_schema={"type": "object", **input_schema},
        binding=McpBinding(name, digest(raw)),
        title=title,
        description=_text(raw.get("description")),
        output_schema=output_schema,
        hints=ToolHints(
            read_only=_read_only(annotations),
            destructive=_flag(annotations.get("destructiveHint")),
            idempotent=_flag(annotations.get("idempotentHint")),
            open_world=_flag(annotations.get("openWorldHint")),
        ),
        operation_id=name,
    )


def _text(value: object) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) and value.strip() else None


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _read_only(annotations: Mapping[str, Any]) -> bool | None:
    """The server's `readOnlyHint`, unless it also says the tool is destructive: of two claims that cannot both hold,
    the gateway takes the one that lets it do less (read-only code mode, `tool.read_only` in policies, the answer
    cache all trust a tool read-only)."""
    if annotations.get("destructiveHint") is True:
        return False
    return _flag(annotations.get("readOnlyHint"))


MAX_OFFERINGS = 5_000
"""Prompts, resources or templates of one server, each."""
MAX_URI = 8 * 1024


def offerings_of(
    prompts: Sequence[object], resources: Sequence[object], templates: Sequence[object]
) -> tuple[McpOfferings, list[DescriptionWarning]]:
    """A server's prompts, resources and templates, each kept with its checked fields only (one whose required
    fields are missing or of the wrong type is left out with a warning); text aimed at the model flagged."""
    warnings: list[DescriptionWarning] = []
    kept: list[tuple[Mapping[str, Any], ...]] = []
    for kind, items, check, key in (
        ("prompts", prompts, _prompt, "name"),
        ("resources", resources, _resource, "uri"),
        ("resourceTemplates", templates, _template, "uriTemplate"),
    ):
        if len(items) > MAX_OFFERINGS:
            raise SpecError(f"the server lists more than {MAX_OFFERINGS} {kind}")
        found: dict[str, Mapping[str, Any]] = {}
        for index, raw in enumerate(items):
            where = f"/{kind}/{index}"
            try:
                checked = check(raw)
                text = _written(checked, str(checked[key])[:80]).decode()
            except ValueError as exc:
                warnings.append(DescriptionWarning(where, f"left out: {exc}"))
                continue
            if checked[key] in found:
                warnings.append(DescriptionWarning(where, f"left out: a second one with {key} {checked[key]!r}"))
                continue
            found[checked[key]] = checked
            flagged = markers(text)
            if flagged:
                warnings.append(DescriptionWarning(where, f"{checked[key]}: it holds {', '.join(flagged)}"))
        kept.append(tuple(found.values()))
    return McpOfferings(*kept), warnings


def _written(raw: object, name: str) -> bytes:
    """`raw` as JSON; ValueError when it is nested deeper than JSON is written here (orjson: 254 levels), which
    orjson raises as a TypeError that nobody reading a definition expects."""
    try:
        return orjson.dumps(raw)
    except orjson.JSONEncodeError as exc:
        raise ValueError(f"{name}: its definition cannot be written as JSON ({exc})") from None


def _prompt(raw: object) -> dict[str, Any]:
    item = _object(raw, "prompt")
    name = _required(item, "name", 256)
    arguments = item.get("arguments") or []
    if not isinstance(arguments, list):
        raise ValueError(f"{name}: its arguments are not a list")
    checked_arguments = []
    for argument in arguments[:100]:
        entry = _object(argument, "prompt argument")
        checked_arguments.append(
            {"name": _required(entry, "name", 256), **_texts(entry), "required": entry.get("required") is True}
        )
    return {"name": name, **_texts(item), "arguments": checked_arguments}


def _resource(raw: object) -> dict[str, Any]:
    item = _object(raw, "resource")
    checked = {"uri": _required(item, "uri", MAX_URI), "name": _required(item, "name", 256), **_texts(item)}
    if isinstance(item.get("mimeType"), str):
        checked["mimeType"] = item["mimeType"][:256]
    if type(item.get("size")) is int:
        checked["size"] = item["size"]
    return checked


def _template(raw: object) -> dict[str, Any]:
    item = _object(raw, "resource template")
    checked = {"uriTemplate": _required(item, "uriTemplate", MAX_URI), "name": _required(item, "name", 256)}
    checked.update(_texts(item))
    if isinstance(item.get("mimeType"), str):
        checked["mimeType"] = item["mimeType"][:256]
    return checked


def _object(raw: object, what: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ValueError(f"a {what} is not an object")
    return raw


def _required(item: Mapping[str, Any], key: str, longest: int) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value or len(value) > longest:
        raise ValueError(f"its {key} is not a string of 1 to {longest} characters")
    return value


def _texts(item: Mapping[str, Any]) -> dict[str, str]:
    return {key: text for key in ("title", "description") if (text := _text(item.get(key))) is not None}
