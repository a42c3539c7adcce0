"""An exposition: operations of one or more services, served as an MCP server.

Everything a call needs is prepared when the exposition is built: tools, the
operation and backend behind each tool name, validators. The request path
looks things up, validates the arguments and calls the backend.

Tools and validators depend only on the operations, not on the backend, so they
live in a `ToolSet` that expositions of the same selection share (with the
encoded tools/list page the engine caches for it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apimcp import __version__
from apimcp.backends.base import Backend
from apimcp.catalog.model import Operation
from apimcp.gateway.results import error_result, tool_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import (
    CacheHint,
    CallToolResult,
    Implementation,
    McpHandler,
    Page,
    RequestContext,
    ServerFeatures,
    Tool,
    ToolAnnotations,
    invalid_params,
)


@dataclass(frozen=True, slots=True)
class ExpositionSettings:
    name: str
    title: str | None = None
    instructions: str | None = None
    cache_hints: Mapping[str, CacheHint] = field(default_factory=dict)
    """ttlMs/cacheScope per cacheable method for 2026-07-28 clients."""


def tool_of(operation: Operation, *, output_schema: bool = True) -> Tool:
    hints = operation.hints
    return Tool(
        name=operation.tool_name,
        title=operation.title,
        description=operation.description,
        input_schema=operation.input_schema,
        output_schema=operation.output_schema if output_schema else None,
        annotations=ToolAnnotations(
            title=operation.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        ),
        meta={"io.apimcp/operation": {"signature": operation.signature, "operationId": operation.operation_id}},
    )


class _Prepared:
    __slots__ = ("input", "operation", "output", "tool")

    def __init__(self, operation: Operation, output_schemas: bool) -> None:
        self.operation = operation
        self.tool = tool_of(operation, output_schema=output_schemas)
        self.input = ArgumentValidator(operation.input_schema)
        schema = operation.output_schema
        self.output = ArgumentValidator(schema) if schema is not None and output_schemas else None


class ToolSet:
    """The tools of some operations, with their validators and their one-page listing; immutable."""

    def __init__(self, operations: Sequence[Operation], output_schemas: bool = True) -> None:
        self.prepared = tuple(_Prepared(operation, output_schemas) for operation in operations)
        self.page = Page(items=tuple(p.tool for p in self.prepared))


class ExpositionHandler(McpHandler):
    """Serves one exposition's tools: tool sets, each called through its backend."""

    features = ServerFeatures(tools=True, tools_list_changed=True, logging=False)

    def __init__(self, settings: ExpositionSettings, members: Sequence[tuple[ToolSet, Backend]]) -> None:
        names = [p.operation.tool_name for tools, _ in members for p in tools.prepared]
        duplicates = sorted(name for name, count in Counter(names).items() if count > 1)
        if duplicates:
            raise ValueError(f"exposition {settings.name!r} offers several tools named {', '.join(duplicates)}")
        self.settings = settings
        self.server_info = Implementation(name=settings.name, version=__version__, title=settings.title)
        self.instructions = settings.instructions
        self._entries = {p.operation.tool_name: (p, backend) for tools, backend in members for p in tools.prepared}
        if len(members) == 1:
            self._page = members[0][0].page  # shared: its encoded form is cached once for every such exposition
        else:
            self._page = Page(items=tuple(p.tool for p, _ in self._entries.values()))

    def cache_hint(self, method: str) -> CacheHint:
        return self.settings.cache_hints.get(method) or super().cache_hint(method)

    def tool_definition(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return entry[0].tool if entry is not None else None

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        if cursor is not None:
            raise invalid_params("Invalid cursor: this server lists every tool on one page", {"field": "cursor"})
        return self._page

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        entry = self._entries.get(name)
        if entry is None:
            raise invalid_params(f"Unknown tool: {name}", {"field": "name"})
        prepared, backend = entry
        problems = prepared.input.problems(arguments)
        if problems:
            return error_result(f"Invalid arguments for {name}: " + "; ".join(problems))
        progress = ctx.progress if ctx.progress_token is not None else None
        result = await backend.call(prepared.operation, arguments, progress)
        return tool_result(result, prepared.output)
