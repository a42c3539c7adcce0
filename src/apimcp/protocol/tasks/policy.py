"""When a tool call becomes a task: a tool's task support and the time it may run before it turns into one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

TaskSupport = Literal["forbidden", "optional", "required"]

DEFAULT_SLOW_SECONDS = 1.0
MIN_AFTER_SECONDS = 0.001
MAX_AFTER_SECONDS = 3600.0

_MODE = re.compile(r"^(off|all|slow)(?::(\d+(?:\.\d+)?)(ms|s))?$")


@dataclass(frozen=True, slots=True)
class TaskPolicy:
    """How calls of one tool run as tasks, for clients that negotiated tasks.

    `after_seconds` is how long a call runs as an ordinary request first: one that finishes (or asks for
    input, in 2026-07-28) within it is answered directly, unless `support` is "required"; one still running
    then is answered with a task. 0 makes every call a task from its start.
    """

    support: Literal["optional", "required"]
    after_seconds: float

    def __post_init__(self) -> None:
        if not 0 <= self.after_seconds <= MAX_AFTER_SECONDS:
            raise ValueError(f"after_seconds must be within 0 and {MAX_AFTER_SECONDS:g}")


def parse_task_mode(text: str) -> TaskPolicy | None:
    """A plan's task mode: "off", "all" (every call a task) or "slow[:N s|ms]" (calls still running after N,
    by default 1 s); None for "off". Raises ValueError naming what is wrong."""
    match = _MODE.match(text.strip())
    if match is None:
        raise ValueError(f'task mode {text!r} must be "off", "all" or "slow" with an optional ":5s" or ":500ms"')
    mode, amount, unit = match.groups()
    if mode == "off":
        if amount is not None:
            raise ValueError('task mode "off" takes no duration')
        return None
    if mode == "all":
        if amount is not None:
            raise ValueError('task mode "all" takes no duration (every call is a task from its start)')
        return TaskPolicy("optional", 0.0)
    seconds = DEFAULT_SLOW_SECONDS if amount is None else float(amount) / (1000 if unit == "ms" else 1)
    if not MIN_AFTER_SECONDS <= seconds <= MAX_AFTER_SECONDS:
        raise ValueError(f"task mode {text!r}: the duration must be from 1 ms to {MAX_AFTER_SECONDS:g} s")
    seconds = round(seconds, 3)  # what `format_task_mode` writes, in whole milliseconds, reads back the same
    return TaskPolicy("optional", seconds)


def format_task_mode(policy: TaskPolicy | None) -> str:
    """The mode text `parse_task_mode` reads back to `policy`."""
    if policy is None:
        return "off"
    if policy.after_seconds == 0:
        return "all"
    millis = round(policy.after_seconds * 1000)
    return f"slow:{millis // 1000}s" if millis % 1000 == 0 else f"slow:{millis}ms"
