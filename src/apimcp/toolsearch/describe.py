"""describe_tools: the full definitions of the tools search_tools found, for the ones a model means to call.

A tool the caller may not call is answered exactly as a tool that does not exist: the same error, naming it
among the unknown ones, so that describing cannot tell which tools hide behind scopes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

import orjson

from apimcp.protocol.models import CallToolResult, TextContent, Tool, ToolAnnotations
from apimcp.toolsearch.errors import ToolSearchError

DESCRIBE = "describe_tools"
MAX_NAMES = 20
MAX_NAME_CHARS = 128
"""MCP's bound on a tool name: longer strings name no tool, and are not echoed back."""

DESCRIBE_TOOL = Tool(
    name=DESCRIBE,
    title="Describe tools",
    description=(
        "The full definitions of tools search_tools found: description, input schema, output schema and "
        "annotations. Ask for the ones you mean to call."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
                "minItems": 1,
                "maxItems": MAX_NAMES,
                "description": "Tool names, as search_tools gave them",
            },
        },
        "required": ["names"],
    },
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)


def describe_result(
    tools: Mapping[str, Tool], arguments: Mapping[str, Any], allowed: Set[str] | None
) -> CallToolResult:
    """The definitions of the tools `arguments["names"]` names, among `tools` the caller may call (`allowed`;
    every one when None)."""
    return definitions_result(described(tools, arguments, allowed))


def definitions_result(tools: Sequence[Tool], *, schemas: bool = True, **more: Any) -> CallToolResult:
    """describe_tools' answer: `{"tools": [definitions], **more}`, as structured content and as its text; without
    `schemas`, the definitions leave out the input and output schemas (`more` says them another way)."""
    structured = {"tools": [definition(tool, schemas=schemas) for tool in tools], **more}
    return CallToolResult(content=(TextContent(text=orjson.dumps(structured).decode()),), structured_content=structured)


def described(tools: Mapping[str, Tool], arguments: Mapping[str, Any], allowed: Set[str] | None) -> list[Tool]:
    """The tools `arguments["names"]` names, in that order, once each; raises ToolSearchError."""
    names = arguments.get("names")
    if (
        not isinstance(names, list)
        or not 1 <= len(names) <= MAX_NAMES
        or not all(isinstance(n, str) and 1 <= len(n) <= MAX_NAME_CHARS for n in names)
    ):
        raise ToolSearchError(
            f'"names" must be a list of 1 to {MAX_NAMES} tool names (strings of 1 to {MAX_NAME_CHARS} characters)'
        )
    wanted = list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in tools or (allowed is not None and n not in allowed)]
    if unknown:
        raise ToolSearchError(f"Unknown tools: {', '.join(unknown)} (search_tools finds this server's tools)")
    return [tools[n] for n in wanted]


def definition(tool: Tool, *, schemas: bool = True) -> dict[str, Any]:
    """A tool as tools/list would give it (the newest revision's fields), without `_meta` and icons (and without its
    schemas unless `schemas`)."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.title:
        out["title"] = tool.title
    if tool.description:
        out["description"] = tool.description
    if schemas:
        out["inputSchema"] = tool.input_schema
        if tool.output_schema is not None:
            out["outputSchema"] = tool.output_schema
    hints = tool.annotations
    if hints is not None:
        annotations = {
            key: value
            for key, value in (
                ("readOnlyHint", hints.read_only_hint),
                ("destructiveHint", hints.destructive_hint),
                ("idempotentHint", hints.idempotent_hint),
                ("openWorldHint", hints.open_world_hint),
            )
            if value is not None
        }
        if annotations:
            out["annotations"] = annotations
    return out
