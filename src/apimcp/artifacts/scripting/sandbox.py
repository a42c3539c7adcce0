"""One run of a script, start to end: the worker thread relays between a script process and the host.

The script is evaluated in a child process (`processes`), in a fresh QuickJS context per run: nothing a
script leaves in its globals or prototypes reaches another run. The context has no module loader and none
of QuickJS's `std`/`os` modules: the only way out is `rs`, whose host functions forward their text here,
where this thread calls the `Host`'s, exactly as if the engine ran in it. When the run is stopped (its
deadline, a cancellation) the child is asked to interrupt the engine, and killed if it has not ended the run
`GRACE_SECONDS` later: a built-in that never checks the interrupt (joining a huge sparse array) ends with its
process. The memory and stack limits are the engine's own.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Final

from apimcp.artifacts.scripting import outcome
from apimcp.artifacts.scripting.host import Host
from apimcp.artifacts.scripting.limits import ScriptLimits
from apimcp.artifacts.scripting.processes import ScriptProcess, ScriptProcesses
from apimcp.artifacts.scripting.script import Script
from apimcp.protocol.models import CallToolResult
from apimcp.script_engine import prelude, program_prelude, wire
from apimcp.shaping import children, frames
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

log = logging.getLogger("apimcp.artifacts.scripting")

GRACE_SECONDS: Final = 0.25
"""How long a stopped run's engine has to notice its interrupt before its process is killed."""
_STACK_MESSAGE = "RangeError: Maximum call stack size exceeded"
_MEMORY_MESSAGE = "InternalError: out of memory"
_FRAME_ALLOWANCE = 2**20


class _Run:
    """What `Host.stop` interrupts: the run in its process, until the run has ended."""

    def __init__(self, process: ScriptProcess) -> None:
        self._process = process
        self._lock = threading.Lock()
        self._ended = False
        self._killer: threading.Timer | None = None
        self.killed = False

    def interrupt(self) -> None:
        with self._lock:
            if self._ended or self._killer is not None:
                return
            self._process.interrupt(self._process.runs)
            self._killer = threading.Timer(GRACE_SECONDS, self._kill)
            self._killer.daemon = True
            self._killer.start()

    def _kill(self) -> None:
        with self._lock:
            if self._ended:
                return
            self.killed = True
            self._process.kill()

    def end(self) -> bool:
        """No more interrupts; whether the process was killed (it cannot run again)."""
        with self._lock:
            self._ended = True
            killer = self._killer
        if killer is not None:
            killer.cancel()
        return self.killed


def execute(
    script: Script,
    input_text: str,
    host: Host,
    limits: ScriptLimits,
    processes: ScriptProcesses,
    large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES,
) -> CallToolResult:
    """Run `script` on `input_text` (JSON of an object) in one of `processes`; never raises. A result of
    `large_from_bytes` and more is passed on unparsed (`outcome.returned`)."""
    try:
        return _execute(script, input_text, host, limits, processes, large_from_bytes)
    except Exception:
        log.exception("custom tool %r: the sandbox failed", script.tool_name)
        return outcome.error(f"{script.subject} could not run: the sandbox failed")


def _execute(
    script: Script, input_text: str, host: Host, limits: ScriptLimits, processes: ScriptProcesses, large: int
) -> CallToolResult:
    seconds = host.deadline - time.monotonic()
    if seconds <= 0:
        return outcome.error(host.timeout_message())
    try:
        process = processes.take()
    except RuntimeError:  # closed meanwhile: the gateway is stopping
        return outcome.error(host.stopped or f"{script.subject} cannot run: the gateway is stopping")
    process.runs += 1
    run = _Run(process)
    host.attach(run)
    ended: frames.Frame | None = None
    code = 0
    try:
        ended = _converse(process, script, input_text, host, limits, seconds)
    except (OSError, ValueError, frames.FrameError):  # the process died or was killed mid-frame
        ended = None
    finally:
        if run.end() or ended is None:
            code = processes.discard(process)
        else:
            processes.give_back(process)
    if ended is None:
        if host.stopped is not None:  # killed at its deadline, or on a cancellation
            return outcome.error(host.stopped)
        log.warning("custom tool %r: its script process ended unexpectedly (%s)", script.tool_name, children.how(code))
        return outcome.error(f"{script.subject} could not run: the script process ended unexpectedly")
    return _classify(script, limits, host, *ended, large)


def _converse(
    process: ScriptProcess, script: Script, input_text: str, host: Host, limits: ScriptLimits, seconds: float
) -> frames.Frame | None:
    """Send the run, serve its host calls; the `done` frame, or None if the process ended first."""
    header = {
        "op": wire.RUN,
        "run": process.runs,
        "memory": limits.memory_bytes,
        "stack": limits.stack_bytes,
        "max_chars": limits.max_result_bytes,
        "seconds": seconds,
        "kind": script.kind,
    }
    texts = (script.source, input_text, host.fallback)
    frames.write(process.stdin, header, [wire.blob(text) for text in texts])
    functions = host.functions
    bound = 4 * limits.max_result_bytes + _FRAME_ALLOWANCE  # UTF-8 of as many UTF-16 units, and some
    while (frame := frames.read(process.stdout, bound)) is not None:
        reply, blobs = frame
        if reply.get("op") == wire.DONE and len(blobs) == 1:
            return frame
        function = functions.get(str(reply.get("name")))
        if reply.get("op") != wire.CALL or len(blobs) != 1 or function is None:
            raise frames.FrameError(f"unexpected frame {reply.get('op')!r} from a script process")
        try:
            answer = function(wire.text(blobs[0]))
        except Exception:
            log.exception("host function %s of a script failed", reply.get("name"))
            answer = host.fallback
        frames.write(process.stdin, {"op": wire.ANSWER}, [wire.blob(answer)])
    return None


def _classify(
    script: Script, limits: ScriptLimits, host: Host, done: dict[str, Any], blobs: list[bytes], large: int
) -> CallToolResult:
    """How the evaluation ended, as the tool's result."""
    end, text = done.get("end"), wire.text(blobs[0])
    if end == wire.STACK:
        return _stack(script, limits)
    if end == wire.UNCAUGHT:
        return _uncaught(script, limits, host, text)
    if done.get("lifted") is not True:
        log.error("custom tool %r: the quickjs binding kept refusing host calls", script.tool_name)
        return outcome.error(f"{script.subject} could not run: the engine refused its host calls")
    if host.failure is not None:  # rs.fail decides, even if the script caught its error
        return outcome.failed(*host.failure)
    return _ended(script, limits, text if end == wire.ENDED else None, large)


def _ended(script: Script, limits: ScriptLimits, answer: object, large_from_bytes: int) -> CallToolResult:
    """The prelude's answer: a letter for how the script ended, then JSON."""
    name = script.subject
    if not isinstance(answer, str) or not answer:
        log.error("custom tool %r: the prelude answered %r", name, type(answer))
        return outcome.error(f"{name} could not run: the sandbox failed")
    kind, text = answer[0], answer[1:]
    if kind == prelude.RETURNED:
        return outcome.returned(name, text, limits.max_result_bytes, large_from_bytes)
    if kind == program_prelude.STALLED:
        return outcome.error(f"{name} waits for a promise that nothing settles (no tool call is under way)")
    try:
        detail = json.loads(text)  # unlike orjson, accepts the lone surrogates a JS string may hold
    except ValueError:
        detail = text
    if kind == program_prelude.FAILED and isinstance(detail, list) and len(detail) == 2:
        line, message = detail
        if message == _STACK_MESSAGE:
            return _stack(script, limits)
        if message == _MEMORY_MESSAGE:
            return _memory(script, limits)
        if message == "null" and line is None:  # QuickJS rejects with null when memory runs out, as `throw null` does
            return _memory_or_null(script, limits)
        where = f" at line {line}" if isinstance(line, int) and line > 0 else ""
        return outcome.error(f"{name} failed{where}: {outcome.well_formed(str(message))[: outcome.MESSAGE_CHARS]}")
    if kind == prelude.THREW:
        if detail == _STACK_MESSAGE:
            return _stack(script, limits)
        if detail == _MEMORY_MESSAGE:
            return _memory(script, limits)
        return outcome.threw(str(detail))
    if kind == prelude.NOT_COMPILED:
        return outcome.error(f"{name} failed to compile: {outcome.well_formed(str(detail))}")
    if kind == prelude.NOT_JSON:
        return outcome.error(f"{name} returned a value that is not JSON: {outcome.well_formed(str(detail))}")
    if kind == prelude.TOO_LARGE:
        return outcome.too_large(name, limits.max_result_bytes)
    log.error("custom tool %r: the sandbox did not start: %s", name, detail)
    return outcome.error(f"{name} could not run: the sandbox did not start")


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
            f"{script.subject} was stopped by its CPU time limit "
            f"({limits.timeout_seconds:g} s, counted over all the gateway's threads)"
        )
    if first in {_MEMORY_MESSAGE, "null"}:  # QuickJS throws null when memory runs out mid-call
        return _memory(script, limits)
    log.error("custom tool %r: uncaught engine exception %s", script.tool_name, first)
    return outcome.error(f"{script.subject} failed: {outcome.well_formed(first)[:200]}")


def _memory(script: Script, limits: ScriptLimits) -> CallToolResult:
    return outcome.error(
        f"{script.subject} ran out of memory: it exceeded its memory limit of {limits.memory_bytes / 2**20:g} MiB"
    )


def _memory_or_null(script: Script, limits: ScriptLimits) -> CallToolResult:
    """A program rejected with null: nothing tells its memory running out from its throwing null (the memory it
    held is freed by the time its rejection is seen)."""
    return outcome.error(
        f"{script.subject} ran out of memory (its limit is {limits.memory_bytes / 2**20:g} MiB) or threw null: "
        "the engine reports both as null"
    )


def _stack(script: Script, limits: ScriptLimits) -> CallToolResult:
    return outcome.error(
        f"{script.subject} exceeded its stack limit of {limits.stack_bytes // 2**10} KiB (recursion too deep?)"
    )
