"""One run of a script, start to end, in the worker thread that owns its QuickJS context.

A fresh context per run: nothing a script leaves in its globals or prototypes reaches another
run. The context has no module loader and none of QuickJS's `std`/`os` modules: the only way out
is `rs`. The host interrupts the engine when the run is stopped (its deadline, a cancellation: see
`engine`); the memory and stack limits are the engine's own.
"""

from __future__ import annotations

import json
import logging
import time

from apimcp.artifacts.scripting import engine, outcome, prelude
from apimcp.artifacts.scripting.host import Host
from apimcp.artifacts.scripting.limits import ScriptLimits
from apimcp.artifacts.scripting.script import Script
from apimcp.protocol.models import CallToolResult
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

log = logging.getLogger("apimcp.artifacts.scripting")

_STACK_MESSAGE = "RangeError: Maximum call stack size exceeded"
_MEMORY_MESSAGE = "InternalError: out of memory"


def execute(
    script: Script, input_text: str, host: Host, limits: ScriptLimits, large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES
) -> CallToolResult:
    """Run `script` on `input_text` (JSON of an object); never raises. A result of `large_from_bytes` and more is
    passed on unparsed (`outcome.returned`)."""
    try:
        return _execute(script, input_text, host, limits, large_from_bytes)
    except Exception:
        log.exception("custom tool %r: the sandbox failed", script.tool_name)
        return outcome.error(f"Custom tool '{script.tool_name}' could not run: the sandbox failed")


def _execute(
    script: Script, input_text: str, host: Host, limits: ScriptLimits, large_from_bytes: int
) -> CallToolResult:
    cpu_seconds = host.deadline - time.monotonic()
    if cpu_seconds <= 0:
        return outcome.error(host.timeout_message())
    context = engine.Context(memory_bytes=limits.memory_bytes, stack_bytes=limits.stack_bytes)
    host.attach(context)
    try:
        functions = host.functions
        for key, global_name in (
            ("ready", prelude.READY),
            ("call", prelude.CALL),
            ("start", prelude.START),
            ("await", prelude.AWAIT),
            ("fail", prelude.FAIL),
        ):
            context.expose(global_name, functions[key], host.fallback)
        context.set_global(prelude.BODY, script.source)
        context.set_global(prelude.INPUT, input_text)
        context.set_global(prelude.MAX_CHARS, limits.max_result_bytes)
        try:
            answer = context.run(prelude.SOURCE, cpu_seconds)
        except engine.StackOverflow:
            return _stack(script, limits)
        except engine.JSException as exc:
            return _uncaught(script, limits, host, str(exc))
        if not context.host_calls_allowed:
            log.error("custom tool %r: the quickjs binding kept refusing host calls", script.tool_name)
            return outcome.error(f"Custom tool '{script.tool_name}' could not run: the engine refused its host calls")
    finally:
        context.close()
    if host.failure is not None:  # rs.fail decides, even if the script caught its error
        return outcome.failed(*host.failure)
    return _ended(script, limits, answer, large_from_bytes)


def _ended(script: Script, limits: ScriptLimits, answer: object, large_from_bytes: int) -> CallToolResult:
    """The prelude's answer: a letter for how the script ended, then JSON."""
    name = script.tool_name
    if not isinstance(answer, str) or not answer:
        log.error("custom tool %r: the prelude answered %r", name, type(answer))
        return outcome.error(f"Custom tool '{name}' could not run: the sandbox failed")
    kind, text = answer[0], answer[1:]
    if kind == prelude.RETURNED:
        return outcome.returned(name, text, limits.max_result_bytes, large_from_bytes)
    try:
        detail = json.loads(text)  # unlike orjson, accepts the lone surrogates a JS string may hold
    except ValueError:
        detail = text
    if kind == prelude.THREW:
        if detail == _STACK_MESSAGE:
            return _stack(script, limits)
        if detail == _MEMORY_MESSAGE:
            return _memory(script, limits)
        return outcome.threw(str(detail))
    if kind == prelude.NOT_COMPILED:
        return outcome.error(f"Custom tool '{name}' failed to compile: {outcome.well_formed(str(detail))}")
    if kind == prelude.NOT_JSON:
        return outcome.error(
            f"Custom tool '{name}' returned a value that is not JSON: {outcome.well_formed(str(detail))}"
        )
    if kind == prelude.TOO_LARGE:
        return outcome.too_large(name, limits.max_result_bytes)
    log.error("custom tool %r: the sandbox did not start: %s", name, detail)
    return outcome.error(f"Custom tool '{name}' could not run: the sandbox did not start")


def _uncaught(script: Script, limits: ScriptLimits, host: Host, text: str) -> CallToolResult:
    """An exception the prelude could not catch: the interrupt, or memory exhausted while catching."""
    first = text.partition("\n")[0]
    if first == "InternalError: interrupted":
        stopped = host.stopped
        if stopped is not None:  # the deadline, or a cancellation
            return outcome.error(stopped)
        # Only where the engine cannot be interrupted: its CPU budget ran out.
        if time.monotonic() >= host.deadline - limits.timeout_seconds / 10:
            return outcome.error(host.timeout_message())
        # Well before the deadline: the budget is the process's CPU time, which other threads spend too.
        return outcome.error(
            f"Custom tool '{script.tool_name}' was stopped by its CPU time limit "
            f"({limits.timeout_seconds:g} s, counted over all the gateway's threads)"
        )
    if first in {_MEMORY_MESSAGE, "null"}:  # QuickJS throws null when memory runs out mid-call
        return _memory(script, limits)
    log.error("custom tool %r: uncaught engine exception %s", script.tool_name, first)
    return outcome.error(f"Custom tool '{script.tool_name}' failed: {outcome.well_formed(first)[:200]}")


def _memory(script: Script, limits: ScriptLimits) -> CallToolResult:
    return outcome.error(
        f"Custom tool '{script.tool_name}' ran out of memory: it exceeded its memory limit "
        f"of {limits.memory_bytes / 2**20:g} MiB"
    )


def _stack(script: Script, limits: ScriptLimits) -> CallToolResult:
    return outcome.error(
        f"Custom tool '{script.tool_name}' exceeded its stack limit of {limits.stack_bytes // 2**10} KiB "
        "(recursion too deep?)"
    )
