"""What stands behind a tool name in an exposition: something that takes arguments and gives a result.

An operation of a service is the common case; custom tools and output filters (`custom_tools.py`,
`composition.py`) are other entries built on top of it, so the handler calls every tool the same way
and a script's inner calls go through exactly the pipeline a client's call does.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from apimcp.artifacts.filter_runner import FilterRunner
from apimcp.artifacts.output_filters import OutputFilter
from apimcp.backends.base import McpResult, UnparsedJson
from apimcp.catalog.model import McpBinding, Operation
from apimcp.elicitation.broker import CredentialRefused
from apimcp.gateway.large_answers import large_answer_result
from apimcp.gateway.member_backends import MemberBackend
from apimcp.gateway.results import error_result, tool_result
from apimcp.gateway.validation import ArgumentValidator
from apimcp.policies.redaction import redact_result
from apimcp.protocol import CallToolResult, RawJson, RequestContext, Tool
from apimcp.shaping.pool import INLINE, Shaper


class ToolEntry:
    """A tool as served: its definition, and how a call is answered."""

    __slots__ = ("tool",)

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    @property
    def name(self) -> str:
        return self.tool.name

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        """Answer a call; `depth` counts the scripts this call is nested in (0 for a client's call)."""
        raise NotImplementedError

    def with_tool(self, tool: Tool) -> ToolEntry:
        """The same entry listed with another definition (a UI binding's `_meta`)."""
        return _Relisted(tool, self)

    def operation_behind(self) -> Operation | None:
        """The service operation a call of this tool makes (None: a script, or nothing), for policies' facts."""
        return None

    def redacting(self, fields: Sequence[str]) -> ToolEntry:
        """The same entry with `fields` of its answers redacted, as a policy asks, before any output filter of its
        own sees them (a filter writing text of its own, such as TOON, would write them out)."""
        return _Redacted(self, fields)

    @property
    def mirrored(self) -> bool:
        """Whether its answers' first text block is their structured content as JSON, read from the same bytes
        (guardrails then search one of the two: `guardrails.scanning.answer_texts`)."""
        return False


class _Relisted(ToolEntry):
    __slots__ = ("_inner",)

    def __init__(self, tool: Tool, inner: ToolEntry) -> None:
        super().__init__(tool)
        self._inner = inner

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        return await self._inner.call(ctx, arguments, depth)

    def operation_behind(self) -> Operation | None:
        return self._inner.operation_behind()

    @property
    def mirrored(self) -> bool:
        return self._inner.mirrored

    def redacting(self, fields: Sequence[str]) -> ToolEntry:
        return _Relisted(self.tool, self._inner.redacting(fields))


class _Redacted(ToolEntry):
    """Another entry whose answers have the fields a policy hides replaced (`redact_result`)."""

    __slots__ = ("_fields", "_inner")

    def __init__(self, inner: ToolEntry, fields: Sequence[str]) -> None:
        super().__init__(inner.tool)
        self._inner = inner
        self._fields = fields

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        result = await self._inner.call(ctx, arguments, depth)
        if isinstance(result.structured_content, RawJson):  # a large answer: parsed again off the event loop
            return await asyncio.to_thread(redact_result, result, self._fields)
        return redact_result(result, self._fields)

    def operation_behind(self) -> Operation | None:
        return self._inner.operation_behind()

    @property
    def mirrored(self) -> bool:
        return self._inner.mirrored  # both the text and the structured content are redacted alike


class RefusedEntry(ToolEntry):
    """A tool a caller may see named but not call here: every call is a tool error saying why."""

    __slots__ = ("_why",)

    def __init__(self, tool: Tool, why: str) -> None:
        super().__init__(tool)
        self._why = why

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        return error_result(self._why)


class OperationEntry(ToolEntry):
    """An operation of a service: arguments validated, its member's backend called for the request (headers passed
    on, the user's credentials: `member_backends`), its answer shaped (a large one by `shaper`, off the event
    loop: `large_answers`)."""

    __slots__ = ("input", "member", "operation", "output", "shaper")

    def __init__(
        self,
        tool: Tool,
        operation: Operation,
        member: MemberBackend,
        input_validator: ArgumentValidator,
        output_validator: ArgumentValidator | None,
        shaper: Shaper = INLINE,
    ) -> None:
        super().__init__(tool)
        self.operation = operation
        self.member = member
        self.input = input_validator
        self.output = output_validator
        self.shaper = shaper

    def operation_behind(self) -> Operation | None:
        return self.operation

    @property
    def mirrored(self) -> bool:
        return not isinstance(self.operation.binding, McpBinding)  # `results.json_result`; an MCP server's: its own

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        problems = self.input.problems(arguments)
        if problems:
            return error_result(f"Invalid arguments for {self.tool.name}: " + "; ".join(problems))
        progress = ctx.progress if ctx.progress_token is not None else None
        try:
            result = await self.member.call(ctx, self.operation, arguments, progress)
        except CredentialRefused as refused:
            return error_result(str(refused))
        if isinstance(result, UnparsedJson):
            return await large_answer_result(result, self.output, self.shaper)
        if isinstance(result, McpResult):  # an MCP server's tool is called by tools/call: never this
            return error_result(f"{self.tool.name}: the MCP server answered something other than a tool result")
        return tool_result(result, self.output)


class FilteredEntry(ToolEntry):
    """Another entry whose results go through an output filter (on the loop or in a shaping process, by size:
    `FilterRunner`); its output schema says what remains."""

    __slots__ = ("_filter", "_inner", "_runner")

    def __init__(self, inner: ToolEntry, output_filter: OutputFilter, runner: FilterRunner) -> None:
        super().__init__(replace(inner.tool, output_schema=output_filter.output_schema(inner.tool.output_schema)))
        self._inner = inner
        self._filter = output_filter
        self._runner = runner

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        return await self._runner.apply(self._filter, await self._inner.call(ctx, arguments, depth))

    def operation_behind(self) -> Operation | None:
        return self._inner.operation_behind()

    def redacting(self, fields: Sequence[str]) -> ToolEntry:
        clone = copy.copy(self)  # listed as it is; what it filters is redacted first
        clone._inner = self._inner.redacting(fields)
        return clone
