"""The options of `plan create` and `plan update` that shape how tools are offered: `--tasks slow:5s`,
`--tool-search`, `--code-mode on`, `--trust-changes`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from apimcp.cli.common import EXIT_USAGE, fail
from apimcp.codemode.setting import CodeModeSettingError, parse_code_mode
from apimcp.protocol.tasks.policy import format_task_mode, parse_task_mode

TasksOption = Annotated[
    str | None,
    typer.Option(
        metavar="MODE",
        help="When tool calls become tasks, for clients that negotiated tasks: off (default), all (every call), "
        "slow (calls still running after 1 s), slow:5s, slow:500ms.",
    ),
]


ToolSearchOption = Annotated[
    bool | None,
    typer.Option(
        "--tool-search/--no-tool-search",
        help="List three tools (search_tools, describe_tools, call_tool) instead of every tool: for APIs with "
        "hundreds of operations.",
    ),
]


CodeModeOption = Annotated[
    str | None,
    typer.Option(
        metavar="MODE",
        help="on: list search_tools, describe_tools and execute_code, which runs a JavaScript program calling the "
        "tools (each call governed as a direct one); read_only: programs call only tools that change nothing; "
        "off (default).",
    ),
]


TrustChangesOption = Annotated[
    bool | None,
    typer.Option(
        "--trust-changes/--no-trust-changes",
        help="An MCP server's plan: serve what the server lists now, without waiting for an admin to accept what it "
        "changed (admin token).",
    ),
]


def task_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's `tasks`, `tool_search` and `code_mode` for the options in `given` (a command's locals), checked
    here to name the option."""
    values: dict[str, Any] = {}
    if given.get("trust_changes") is not None:
        values["trust_changes"] = given["trust_changes"]
    if given["tool_search"] is not None:
        values["tool_search"] = given["tool_search"]
    if given["code_mode"] is not None:
        try:
            values["code_mode"] = parse_code_mode(given["code_mode"])
        except CodeModeSettingError as exc:
            fail(f"--code-mode: {exc}", EXIT_USAGE)
    text = given["tasks"]
    if text is None:
        return values
    try:
        policy = parse_task_mode(text)
    except ValueError as exc:
        fail(f"--tasks: {exc}", EXIT_USAGE)
    return {**values, "tasks": format_task_mode(policy) if policy is not None else None}
