"""Stopping a running QuickJS evaluation from another thread, which the quickjs-ng binding has no API for.

The binding's interrupt handler answers "stop" once `clock() - start >= budget`, where `start` and `budget`
are two words of the binding's context object, copied there from its time-limit setting when an evaluation
starts and read again at every interrupt check (QuickJS checks every few thousand operations, loops
included). Writing 0 into the budget word therefore stops the evaluation at its next check, whatever CPU
time has been spent, from any thread: the engine's wall-clock deadline.

The word is found once, by its contents rather than by the binding's struct layout: a context given a
distinctive limit and run once holds that many ticks in exactly two words, the setting and the armed copy;
the copy is the one that keeps its value when the setting changes. If that does not find exactly one word
(another binding release, another platform), `BUDGET_OFFSET` is None and scripts are bounded by CPU time only,
as the binding does by itself. `tests/artifacts/scripting/test_engine.py` pins both the finding and its effect.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any

import quickjs  # type: ignore[import-untyped]

log = logging.getLogger("apimcp.script_engine")

_PROBE_SECONDS = 4321.0
_CHANGED_SECONDS = 1234.0
_TICKS_PER_SECOND = (1_000_000, 1_000)  # CLOCKS_PER_SEC: POSIX's, Windows'
_WORD = ctypes.sizeof(ctypes.c_int64)


def _words(context: Any) -> dict[int, int]:
    """The object's 8-byte words after its Python header (type and reference count), by offset."""
    size = type(context).__basicsize__
    base = id(context)  # CPython: the object's address
    return {offset: ctypes.c_int64.from_address(base + offset).value for offset in range(16, size - _WORD + 1, _WORD)}


def _budget_offset() -> int | None:
    try:
        context = quickjs.Context()
        context.set_time_limit(_PROBE_SECONDS)
        context.eval("0")  # arms the handler: the budget is copied
        context.set_time_limit(_CHANGED_SECONDS)  # the setting changes, the armed copy does not
        words = _words(context)
    except Exception:  # a binding without these methods: nothing to find
        log.exception("the quickjs binding could not be probed for its interrupt budget")
        return None
    for ticks in _TICKS_PER_SECOND:
        armed = [offset for offset, value in words.items() if value == int(_PROBE_SECONDS * ticks)]
        setting = [offset for offset, value in words.items() if value == int(_CHANGED_SECONDS * ticks)]
        if len(armed) == 1 and len(setting) == 1:
            return armed[0]
    return None


BUDGET_OFFSET = _budget_offset()
"""Where the armed CPU budget lives in a binding context object; None if it could not be found."""
if BUDGET_OFFSET is None:
    log.error("the quickjs binding's interrupt budget was not found: scripts stop at their CPU time limit only")


def stop_now(context: Any) -> None:
    """Make the evaluation running in `context` stop at its next interrupt check (any thread).

    The caller keeps `context` alive, and calls this only once the evaluation has started (before that,
    starting would copy the setting over the zero)."""
    assert BUDGET_OFFSET is not None
    ctypes.c_int64.from_address(id(context) + BUDGET_OFFSET).value = 0  # one aligned store: atomic
