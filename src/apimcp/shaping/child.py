"""A shaping process: runs the jobs the gateway sends, one at a time, until its input ends.

`python -m apimcp.shaping.child`: frames arrive on stdin and replies leave on the original stdout, which
nothing else may write to (stray prints go to stderr instead). A job is a function `job(args, blobs) ->
(reply, blobs)` named `module:qualname`; the reply says `ok` with the job's own, the process's pid (the gateway
checks work happened elsewhere), or the type of the exception the job raised (never its message or a
traceback: they could quote the content). The process runs at a lower priority than the gateway (its event
loop wins the CPU when both want it), ignores the terminal's Ctrl-C (the gateway stops it), and runs with the
cyclic collector off: JSON values hold no cycles, and what a job leaves is collected after its reply.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Final

from apimcp.shaping import frames
from apimcp.shaping.names import named

NICENESS: Final = 10
MAX_JOB_BYTES: Final = 1 << 40
"""Bounds nothing in practice: the gateway is the only writer, and bounds what it sends itself."""

Job = Callable[[dict[str, Any], list[bytes]], tuple[dict[str, Any], list[bytes]]]

_jobs: dict[str, Job] = {}


def _job(name: str) -> Job:
    job = _jobs.get(name)
    if job is None:
        job = _jobs[name] = named(name)
    return job


def serve(inbound: BinaryIO, outbound: BinaryIO) -> None:
    while (frame := frames.read(inbound, MAX_JOB_BYTES)) is not None:
        _answer(*frame, outbound)
        del frame
        gc.collect()  # what the job made is freed by now: little is left to walk


def _answer(header: dict[str, Any], blobs: list[bytes], outbound: BinaryIO) -> None:
    try:
        reply, out = _job(str(header["job"]))(header.get("args") or {}, blobs)
    except Exception as exc:
        frames.write(outbound, {"ok": False, "pid": os.getpid(), "error": type(exc).__name__})
        return
    frames.write(outbound, {"ok": True, "pid": os.getpid(), "reply": reply}, out)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    outbound = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    gc.disable()
    gc.freeze()
    with contextlib.suppress(BrokenPipeError, frames.FrameError):  # the gateway went away
        serve(sys.stdin.buffer, outbound)


if __name__ == "__main__":
    main()
