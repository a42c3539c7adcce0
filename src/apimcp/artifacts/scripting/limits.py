"""The guardrails of one scripted custom tool run."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScriptLimits:
    """What a script may use. The defaults suit tools that orchestrate a few API calls.

    `timeout_seconds` is wall-clock time from the moment the run is asked for (time spent waiting
    for a free worker counts): at that deadline the caller is answered, the run's JavaScript is
    interrupted and its worker is free for the next run.
    `max_result_bytes` bounds every JSON text a script hands to Python: its result, the arguments
    of each tool call and the data of `rs.fail`. `workers` scripts run at once per nesting level
    (see `ScriptRunner`), at most `exposition_workers` of them for one exposition; `max_queued`
    more of each exposition may wait for a worker, and its further runs are refused.
    A run at depth `d` (0 for a client's call; a scripted tool called from a script is one deeper)
    is refused when `d > max_depth`.
    Each script is evaluated in a process of its own whose data memory (`RLIMIT_DATA`) is capped at
    `memory_bytes`, its engine thread's stack, and `process_overhead_bytes` for the interpreter itself.
    """

    timeout_seconds: float = 10.0
    memory_bytes: int = 64 * 2**20
    stack_bytes: int = 256 * 2**10
    max_calls: int = 50
    max_depth: int = 5
    max_result_bytes: int = 10 * 2**20
    workers: int = 4
    exposition_workers: int = 3
    max_queued: int = 32
    process_overhead_bytes: int = 256 * 2**20

    def __post_init__(self) -> None:
        if not self.timeout_seconds > 0:
            raise ValueError(f"timeout_seconds must be positive, not {self.timeout_seconds}")
        # Below these the engine cannot even start the prelude; the messages say so early.
        if self.memory_bytes < 2**20:
            raise ValueError(f"memory_bytes must be at least 1 MiB, not {self.memory_bytes}")
        if self.stack_bytes < 64 * 2**10:
            raise ValueError(f"stack_bytes must be at least 64 KiB, not {self.stack_bytes}")
        if self.process_overhead_bytes < 64 * 2**20:  # an interpreter with the quickjs binding needs about 20 MiB
            raise ValueError(f"process_overhead_bytes must be at least 64 MiB, not {self.process_overhead_bytes}")
        for name in ("max_calls", "max_depth", "max_queued"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)}")
        for name in ("max_result_bytes", "workers", "exposition_workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, not {getattr(self, name)}")


DEFAULT_LIMITS = ScriptLimits()
