"""execute_code: the tool a code-mode exposition lists to run a program, and what it accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apimcp.artifacts.scripting import Script
from apimcp.codemode.limits import CodeModeLimits
from apimcp.protocol.models import Tool, ToolAnnotations

EXECUTE: Final = "execute_code"
SUBJECT: Final = "The program"
"""How the sandbox's messages name a program ("The program failed at line 3: ...")."""


class ProgramError(ValueError):
    """execute_code's arguments are not a program it can run; the message says why (a tool error)."""


def execute_tool(limits: CodeModeLimits, read_only: bool) -> Tool:
    """The execute_code tool, its description stating the limits a program runs within."""
    only = " Only tools that change nothing can be called." if read_only else ""
    return Tool(
        name=EXECUTE,
        title="Run a program that calls tools",
        description=(
            "Run JavaScript that calls this server's tools and returns one result: only what the program returns "
            "reaches you. The code is the body of an async function: "
            "`const pet = await tools.get_pet({petId: 1}); return {name: pet.name};`. tools.<name>(args) "
            "resolves to the tool's structured result (or its text) and throws an Error on a tool error; calls "
            "started before they are awaited run in parallel (`await Promise.all([...])`). Find tools with "
            "search_tools; describe_tools gives their TypeScript declarations. Errors name the line of the "
            f"program. Limits: {limits.timeout_seconds:g} s, {limits.max_calls} tool calls, "
            f"{limits.max_result_bytes} bytes of result; no network, files, timers or modules.{only}"
        ),
        input_schema={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The body of an async function, in JavaScript; `tools` is in scope",
                    "maxLength": limits.max_code_bytes,
                },
            },
            "required": ["code"],
        },
        annotations=ToolAnnotations(read_only_hint=read_only, destructive_hint=not read_only, open_world_hint=True),
    )


def program(arguments: Mapping[str, Any], limits: CodeModeLimits) -> Script:
    """The program execute_code was given, ready for the runner; raises ProgramError."""
    extra = sorted(set(arguments) - {"code"})
    if extra:
        raise ProgramError(f'execute_code takes only "code", not {", ".join(repr(name) for name in extra)}')
    code = arguments.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ProgramError('"code" must be the JavaScript of the program (the body of an async function)')
    try:
        size = len(code.encode())
    except UnicodeEncodeError:
        raise ProgramError('"code" is not valid Unicode') from None
    if size > limits.max_code_bytes:
        raise ProgramError(f'"code" is longer than {limits.max_code_bytes} bytes')
    return Script(EXECUTE, code, None, kind="program", label=SUBJECT)
