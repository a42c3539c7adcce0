"""The options of `plan create` and `plan update` that shape how tools are offered: `--tasks slow:5s`,
`--tool-search`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer

from apimcp.cli.common import EXIT_USAGE, fail
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


def task_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's `tasks` for the option in `given` (a command's locals), checked here to name the option."""
    values: dict[str, Any] = {}
    if given["tool_search"] is not None:
        values["tool_search"] = given["tool_search"]
    text = given["tasks"]
    if text is None:
        return values
    try:
        policy = parse_task_mode(text)
    except ValueError as exc:
        fail(f"--tasks: {exc}", EXIT_USAGE)
    return {**values, "tasks": format_task_mode(policy) if policy is not None else None}
