"""What the gateway's pools of Python child processes (shaping, scripts) do alike: where a child imports from,
how its pipes are closed, how its end is told, and how a closing pool stops its children."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Collection
from typing import Final

STOP_SECONDS: Final = 1.0
"""How long idle children of a closing pool have to end with their input before they are killed."""

Child = subprocess.Popen[bytes]


def import_path() -> str:
    """`PYTHONPATH` for a child that imports what this process imports, from the same places (started with
    `-P`: never from its working directory)."""
    return os.pathsep.join(path for path in sys.path if path)


def close_pipes(child: Child) -> None:
    for pipe in (child.stdin, child.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def how(code: int | None) -> str:
    """A child's exit code in words."""
    if code is None:
        return "still running"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def stop(idle: Collection[Child], busy: Collection[Child]) -> list[Child]:
    """Stop a closing pool's children: busy ones are killed (whoever reads their pipes sees them end), idle ones
    end with their input, or are killed `STOP_SECONDS` later. Returns the idle children whose end came later than
    that (they were killed); the pipes of the idle ones are closed."""
    for child in busy:
        with contextlib.suppress(ProcessLookupError):
            child.kill()
    for child in idle:
        if child.stdin is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()
    deadline = time.monotonic() + STOP_SECONDS
    late = []
    for child in idle:
        try:
            child.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            late.append(child)
            child.kill()
            child.wait()
        close_pipes(child)
    return late
