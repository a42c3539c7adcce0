"""A narrow, typed wrapper around the quickjs-ng binding, and the quirks it works around.

The binding's CPU time limit (`set_time_limit`) is enforced by a QuickJS interrupt handler that
it installs when an evaluation starts, if a limit is set then. But it also refuses every call
from JavaScript into Python while a limit is set ("Can not call into Python with a time limit
set"), and scripts live on such calls. Its bookkeeping makes both possible in one evaluation:
the handler is installed (with its start time and budget copied) at the start, and the refusal
reads the flag at each call. `Context.run` sets the limit, starts the evaluation, and lets the
source's first statement drop the last reference to a registered callable whose finalizer clears
the flag, in the evaluating thread. The interrupt then stays armed for the rest of the evaluation
while host calls go through. Tests pin both halves (`test_engine.py`), so a binding release that
changes either fails loudly rather than silently losing the guardrail.

The binding's limit is CPU time of the whole process (`clock()`), not wall-clock time: a script that
waited on tools still has its whole budget after its deadline. So the limit set is out of reach, and
`interrupt` stops the evaluation instead, from any thread, at the wall-clock moment the gateway decides
(`interrupt.py`; in a script process, its control thread calls it: `child.py`).
The same finalizer arms it: before the evaluation has started, an interrupt is remembered and
applied then. Where that cannot work (`interrupt.BUDGET_OFFSET` is None) the CPU budget stays.

A context is used by one thread only, from creation to `close` (`interrupt` aside, which touches no
runtime): the binding's runtimes crash when used from several threads, even one at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import quickjs  # type: ignore[import-untyped]

from apimcp.script_engine import interrupt

log = logging.getLogger("apimcp.script_engine")

JSException: type[Exception] = quickjs.JSException
"""A JavaScript exception that left an evaluation; its text is `String(error)` then the stack."""
StackOverflow: type[Exception] = quickjs.StackOverflow
"""A `JSException` whose text says the JavaScript stack limit was hit."""

_UNLOCK = "__apimcp_unlock"
_OUT_OF_REACH = 1e9
"""Seconds of CPU time: the limit set when `interrupt` can stop an evaluation (it must be set to be armed)."""

INTERRUPTIBLE = interrupt.BUDGET_OFFSET is not None
"""Whether `Context.interrupt` works with this binding (else only the CPU budget stops a script)."""


class _Switch:
    """What the finalizer needs: the context while an evaluation starts, and the outcome."""

    __slots__ = ("context", "lifted")

    def __init__(self) -> None:
        self.context: Context | None = None
        self.lifted = False


class _Unlock:
    """Never called: its finalizer runs when JavaScript drops it, and clears the binding's flag."""

    __slots__ = ("_switch",)

    def __init__(self, switch: _Switch) -> None:
        self._switch = switch

    def __call__(self, *_: object) -> None:
        return None

    def __del__(self) -> None:
        context = self._switch.context
        if context is not None:
            context._started()
            self._switch.lifted = True


class Context:
    """One QuickJS runtime with its limits, for a single evaluation."""

    def __init__(self, *, memory_bytes: int, stack_bytes: int) -> None:
        self._context: Any = quickjs.Context()
        self._context.set_memory_limit(memory_bytes)
        self._context.set_max_stack_size(stack_bytes)
        self._switch = _Switch()
        self._used = False
        self._lock = threading.Lock()
        self._armed = False
        """The evaluation has started: its budget may be zeroed."""
        self._interrupted = False

    def set_global(self, name: str, value: str | int) -> None:
        self._context.set(name, value)

    def expose(self, name: str, function: Callable[[str], str], fallback: str) -> None:
        """Make `function(text) -> text` a JavaScript global.

        The wrapper never raises: a Python exception escaping into the binding leaves the
        interpreter's error indicator set, so a bug answers `fallback` (and is logged) instead.
        """

        def call(*arguments: object) -> str:
            if len(arguments) != 1 or not isinstance(arguments[0], str):
                return fallback
            try:
                return function(arguments[0])
            except Exception:
                log.exception("host function %s of a script failed", name)
                return fallback

        self._context.add_callable(name, call)

    def run(self, source: str, cpu_seconds: float) -> object:
        """Evaluate `source` once, with host calls allowed, until it ends or `interrupt` stops it.

        `cpu_seconds` bounds its CPU time only where the binding cannot be interrupted (`INTERRUPTIBLE`)."""
        if self._used:
            raise RuntimeError("a scripting Context evaluates once (its interrupt stays armed)")
        self._used = True
        self._switch.context = self
        self._context.add_callable(_UNLOCK, _Unlock(self._switch))  # the binding holds the only reference
        self._context.set_time_limit(_OUT_OF_REACH if INTERRUPTIBLE else max(cpu_seconds, 0.001))
        try:
            return self._context.eval(f"delete globalThis.{_UNLOCK};\n{source}")
        finally:
            self._switch.context = None  # no cycle context -> callable -> context if it never ran

    def run_jobs(self) -> None:
        """Run the promise jobs queued so far, and those they queue: from a host function, during `run`, whose
        interrupt stays armed for them. Raises `JSException` when a job is interrupted or fails outside any
        promise (memory)."""
        while self._context.execute_pending_job():
            pass

    def interrupt(self) -> None:
        """Stop the evaluation at the engine's next interrupt check, from any thread (an uncatchable
        `InternalError: interrupted`); before it starts, it stops as soon as it does."""
        with self._lock:
            self._interrupted = True
            if self._armed and self._context is not None and INTERRUPTIBLE:
                interrupt.stop_now(self._context)

    def _started(self) -> None:
        """In the evaluating thread, once the evaluation has started (its budget is in place)."""
        self._context.set_time_limit(-1)  # the refusal's flag only: the interrupt armed at the start stays
        with self._lock:
            self._armed = True
            if self._interrupted and INTERRUPTIBLE:
                interrupt.stop_now(self._context)

    @property
    def host_calls_allowed(self) -> bool:
        """Whether `run` managed to lift the binding's refusal of host calls."""
        return self._switch.lifted

    def close(self) -> None:
        """Free the runtime now, in this thread (an `interrupt` afterwards does nothing)."""
        with self._lock:
            self._context = None
