"""Custom tools as exposition entries: declarative ones call one target, scripted ones run a sandboxed script.

Both validate their own input first (their `input` schema is served whole as the tool's inputSchema).
A declarative tool then calls its target entry with templated arguments (the same call); a scripted tool
hands the sandbox a way to call other tools, which finds them by name among everything this exposition can
call (including targets that custom tools hide from clients) or, for `Service:version` references, in
another exposition of the same organization, and calls each through the `CallPath` of the exposition it
belongs to (its rate limits, audit trail and telemetry: `calls.py`) and its own full pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from apimcp.artifacts.declarative import ArgumentTemplate
from apimcp.artifacts.scripting import Script, ScriptRunner, ToolRef
from apimcp.catalog.model import Operation
from apimcp.gateway.calls import CallPath, CallTarget
from apimcp.gateway.results import error_result
from apimcp.gateway.tool_entries import ToolEntry
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import CallToolResult, RequestContext, Tool, invalid_params

ToolLookup = Callable[[ToolRef], CallTarget | None]
"""Finds the tool a script's call names (its entry and its exposition's path), or None."""
Equivalents = Callable[[str], Iterable[str]]
"""Every name a tool of the script's own service answers to (tool name, operationId, `METHOD /path`)."""
Gate = Callable[[RequestContext, str], str | None]
"""Why the caller may not call a tool (its token lacks the tool's scopes), or None."""


def custom_tool_definition(name: str, spec: Mapping[str, Any]) -> Tool:
    return Tool(
        name=name,
        title=spec.get("title"),
        description=spec.get("description"),
        input_schema=dict(spec.get("input") or {"type": "object"}),
        meta={"io.apimcp/customTool": {"kind": "script" if "script" in spec else "declarative"}},
    )


class _CustomEntry(ToolEntry):
    __slots__ = ("_input",)

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        super().__init__(custom_tool_definition(name, spec))
        self._input = ArgumentValidator(self.tool.input_schema)

    def _problems(self, arguments: Mapping[str, Any]) -> CallToolResult | None:
        problems = self._input.problems(arguments)
        if problems:
            return error_result(f"Invalid arguments for {self.tool.name}: " + "; ".join(problems))
        return None


class DeclarativeEntry(_CustomEntry):
    """Calls its target with arguments templated from its own input."""

    __slots__ = ("_gate", "_target", "_template")

    def __init__(self, name: str, spec: Mapping[str, Any], target: ToolEntry, gate: Gate | None = None) -> None:
        super().__init__(name, spec)
        self._target = target
        self._template = ArgumentTemplate.compile(spec.get("arguments") or {})
        self._gate = gate

    def operation_behind(self) -> Operation | None:
        return self._target.operation_behind()

    @property
    def target_name(self) -> str:
        return self._target.name

    def stand_for(self, target: ToolEntry) -> None:
        """Call `target` (its name's entry once the exposition is composed: its output filter included)."""
        self._target = target

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        refused = self._problems(arguments)
        if refused is not None:
            return refused
        lacking = self._gate(ctx, self._target.name) if self._gate is not None else None
        if lacking is not None:  # the tool it stands for needs scopes the caller lacks
            return error_result(lacking)
        return await self._target.call(ctx, self._template.render(arguments), depth)


class ScriptedEntry(_CustomEntry):
    """Runs its script in the sandbox; the script's calls reach tools through `lookup`."""

    __slots__ = ("_calls", "_gate", "_lookup", "_runner", "_script", "_via")

    def __init__(
        self,
        name: str,
        spec: Mapping[str, Any],
        runner: ScriptRunner,
        lookup: ToolLookup,
        equivalents: Equivalents,
        calls: CallPath,
        gate: Gate | None = None,
    ) -> None:
        """`calls`: the path of the tool's own exposition (its calls say they come from there, and its runs take
        that exposition's share of the script workers)."""
        super().__init__(name, spec)
        script = Script.from_spec(name, spec)
        # The allow-list may name a tool of its service one way and the script call it another.
        declared = script.allowed or frozenset()
        allowed = {ToolRef(None, alias) for ref in declared if ref.service is None for alias in equivalents(ref.tool)}
        self._script = replace(script, allowed=declared | allowed)
        self._runner = runner
        self._lookup = lookup
        self._gate = gate
        self._calls = calls
        self._via = calls.via(name)

    async def call(self, ctx: RequestContext, arguments: Mapping[str, Any], depth: int = 0) -> CallToolResult:
        refused = self._problems(arguments)
        if refused is not None:
            return refused
        lookup, gate, via, calls = self._lookup, self._gate, self._via, self._calls

        async def invoke(ref: ToolRef, inner_arguments: Mapping[str, Any], inner_depth: int) -> CallToolResult:
            target = lookup(ref)
            if target is None:
                where = f" of {ref.service}" if ref.service else ""
                unknown = invalid_params(f"Unknown tool{where}: {ref.tool}", {"tool": ref.tool, "service": ref.service})
                raise calls.refused(ref.tool, ctx, unknown, via)
            refused = gate(ctx, target.entry.name) if gate is not None and ref.service is None else None
            if refused is not None:  # a script calls on its caller's behalf, with the caller's rights
                raise calls.refused(target.entry.name, ctx, invalid_params(refused, {"tool": ref.tool}), via)
            return await target.path.call(target.entry, ctx, inner_arguments, inner_depth, via)

        return await self._runner.run(self._script, arguments, invoke, depth, self._calls.exposition_id)
