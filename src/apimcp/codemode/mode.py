"""An exposition in code mode: it lists search_tools, describe_tools and execute_code, and runs programs.

Discovery is search mode's (`toolsearch.discovery`); describe_tools adds the TypeScript declarations of the
tools described. A program runs in the scripts' sandbox (`artifacts.scripting`) with code mode's limits, in the
exposition's share of the script workers; each `tools.<name>(args)` of the program reaches the gateway through
the `Invoke` the exposition gives for that call, which finds, checks and calls the tool exactly as a client's
call of it (`gateway/exposition.py`). In read-only mode, only tools annotated `readOnlyHint` are searched,
described and called.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import replace
from typing import Any

from apimcp.artifacts.scripting import Invoke, ScriptRunner
from apimcp.codemode.limits import CodeModeLimits
from apimcp.codemode.program import EXECUTE, execute_tool, program
from apimcp.codemode.typescript import RESERVED, declaration
from apimcp.protocol.models import CallToolResult, Page, Tool
from apimcp.toolsearch.describe import DESCRIBE, definitions_result, described
from apimcp.toolsearch.discovery import Discovery
from apimcp.toolsearch.errors import ToolSearchError
from apimcp.toolsearch.tools import SEARCH

NAMES = frozenset({SEARCH, DESCRIBE, EXECUTE})

_SEARCH_DESCRIPTION = (
    "Search this server's tools by what you want to do (plain words: 'merge a pull request'). Returns the best "
    "matches: name, title, summary and parameter names (* marks required ones). describe_tools gives their "
    "TypeScript declarations; call them from a program with execute_code."
)
_DESCRIBE_DESCRIPTION = (
    "The definitions of tools search_tools found (description, annotations) and the TypeScript declarations of "
    "their functions in execute_code's `tools`: their arguments and what they resolve to. Ask for the ones you "
    "mean to call; schemas: true adds their JSON input and output schemas."
)
_SCHEMAS = {"type": "boolean", "description": "true: also each tool's JSON input and output schemas", "default": False}


def code_mode_page(search_page: Page[Tool], limits: CodeModeLimits, read_only: bool) -> Page[Tool]:
    """search mode's search_tools and describe_tools (`search_page`), told of execute_code, and execute_code."""
    search, describe, _ = search_page.items
    asked = dict(describe.input_schema)
    asked["properties"] = {**asked["properties"], "schemas": _SCHEMAS}
    return Page(
        items=(
            replace(search, description=_SEARCH_DESCRIPTION),
            replace(describe, description=_DESCRIBE_DESCRIPTION, input_schema=asked),
            execute_tool(limits, read_only),
        )
    )


class CodeMode:
    def __init__(
        self, discovery: Discovery, runner: ScriptRunner, limits: CodeModeLimits, *, read_only: bool = False
    ) -> None:
        self.discovery = discovery
        self.read_only = read_only
        self._runner = runner
        self._limits = limits
        self._run_limits = limits.for_runs(runner.limits)
        self._declarations: dict[str, str] = {}
        self.page = code_mode_page(discovery.page, limits, read_only)
        """What tools/list gives: search_tools, describe_tools and execute_code."""

    def definition(self, name: str) -> Tool | None:
        return next((tool for tool in self.page.items if tool.name == name), None)

    def reachable(self, allowed: Set[str] | None) -> Set[str] | None:
        """The tools programs may call among those the caller may (`allowed`; every one when None)."""
        if not self.read_only:
            return allowed
        only = self.discovery.read_only
        return only if allowed is None else only & allowed

    def refusal(self, name: str) -> str | None:
        """Why a program may not call `name` whatever the caller's rights (read-only mode), or None."""
        if self.read_only and name not in self.discovery.read_only:
            return f"{name} may change data: this server's programs call only tools that change nothing"
        return None

    async def search(self, arguments: Mapping[str, Any], allowed: Set[str] | None) -> CallToolResult:
        return await self.discovery.search(arguments, self.reachable(allowed))

    def describe(self, arguments: Mapping[str, Any], allowed: Set[str] | None) -> CallToolResult:
        """describe_tools: the tools' definitions (their JSON schemas only when asked: the declarations say them in
        a fraction of the tokens), and `typescript`, the declaration of their functions."""
        schemas = arguments.get("schemas", False)
        if not isinstance(schemas, bool):
            raise ToolSearchError('"schemas" must be true or false')
        tools = described(self.discovery.tools, arguments, self.reachable(allowed))
        methods = "\n".join(self._declaration(tool) for tool in tools if tool.name not in RESERVED)
        return definitions_result(tools, schemas=schemas, typescript=f"declare const tools: {{\n{methods}\n}};")

    def _declaration(self, tool: Tool) -> str:
        known = self._declarations.get(tool.name)
        if known is None:  # made once per exposition, the first time a tool is described
            known = self._declarations[tool.name] = declaration(tool)
        return known

    async def execute(self, arguments: Mapping[str, Any], invoke: Invoke, share: str) -> CallToolResult:
        """Run the program `arguments` holds, in `share`'s part of the script workers; its calls reach tools through
        `invoke`. Raises ProgramError for arguments that are no program, `McpError` when no script worker is free
        in time, and what a call needs the user to supply first."""
        return await self._runner.run(program(arguments, self._limits), {}, invoke, 0, share, self._run_limits)
