"""A narrow, typed wrapper around the quickjs-ng binding, and its one quirk worked around.

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

The limit is CPU time of the whole process (`clock()`), counted from the start of the evaluation.
A context is used by one thread only, from creation to `close`: the binding's runtimes crash when
used from several threads, even one at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import quickjs  # type: ignore[import-untyped]

log = logging.getLogger("apimcp.artifacts.scripting")

JSException: type[Exception] = quickjs.JSException
"""A JavaScript exception that left an evaluation; its text is `String(error)` then the stack."""
StackOverflow: type[Exception] = quickjs.StackOverflow
"""A `JSException` whose text says the JavaScript stack limit was hit."""

_UNLOCK = "__apimcp_unlock"


class _Switch:
    """What the finalizer needs: the binding context while an evaluation starts, and the outcome."""

    __slots__ = ("context", "lifted")

    def __init__(self) -> None:
        self.context: Any = None
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
            context.set_time_limit(-1)  # the flag only: the interrupt armed at the start stays
            self._switch.lifted = True


class Context:
    """One QuickJS runtime with its limits, for a single evaluation."""

    def __init__(self, *, memory_bytes: int, stack_bytes: int) -> None:
        self._context: Any = quickjs.Context()
        self._context.set_memory_limit(memory_bytes)
        self._context.set_max_stack_size(stack_bytes)
        self._switch = _Switch()
        self._used = False

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
        """Evaluate `source` once, with host calls allowed and at most `cpu_seconds` of CPU time."""
        if self._used:
            raise RuntimeError("a scripting Context evaluates once (its interrupt stays armed)")
        self._used = True
        self._switch.context = self._context
        self._context.add_callable(_UNLOCK, _Unlock(self._switch))  # the binding holds the only reference
        self._context.set_time_limit(max(cpu_seconds, 0.001))
        try:
            return self._context.eval(f"delete globalThis.{_UNLOCK};\n{source}")
        finally:
            self._switch.context = None  # no cycle context -> callable -> context if it never ran

    @property
    def host_calls_allowed(self) -> bool:
        """Whether `run` managed to lift the binding's refusal of host calls."""
        return self._switch.lifted

    def close(self) -> None:
        """Free the runtime now, in this thread."""
        self._context = None
