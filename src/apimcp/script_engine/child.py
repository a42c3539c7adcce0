"""A script process: evaluates the runs the gateway sends, one at a time, until its input ends.

`python -P -m apimcp.script_engine.child DATA_BYTES STACK_BYTES CONTROL_FD`. Frames arrive on stdin and
leave on the original stdout (stray prints go to stderr). Each run gets a fresh QuickJS context, evaluated
in a thread of `STACK_BYTES` (QuickJS checks its stack limit against the thread's stack); its host functions
forward their text to the gateway and block for the answer (`wire`). A second thread reads run numbers from
the control pipe and interrupts that run's engine: the gateway's graceful stop, before it kills the process.

The process lowers its priority (the gateway's event loop wins the CPU when both want it), caps its data
memory at `DATA_BYTES` (`RLIMIT_DATA`: the engine has its own, smaller limit; this one bounds everything
else), and ignores the terminal's Ctrl-C (the gateway stops it). The gateway gives it no environment of its
own: nothing it holds (secrets included) is inherited.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Final

from apimcp.script_engine import engine, prelude, program_prelude, wire
from apimcp.shaping import frames

NICENESS: Final = 10
MAX_FRAME_BYTES: Final = 1 << 40
"""Bounds nothing in practice: the gateway is the only writer, and bounds what it sends itself."""
_LISTENER_STACK: Final = 256 * 2**10

_GLOBALS: Final = {
    "ready": prelude.READY,
    "call": prelude.CALL,
    "start": prelude.START,
    "await": prelude.AWAIT,
    "fail": prelude.FAIL,
    "next": program_prelude.NEXT,
}
_SOURCES: Final = {"script": prelude.SOURCE, "program": program_prelude.SOURCE}


class _Current:
    """The run under way and its engine, which the control thread interrupts by number."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._run = -1
        self._context: engine.Context | None = None
        self._stop = -1
        """The last run number asked to stop: it may arrive before its run does."""

    def begin(self, run: int, context: engine.Context) -> None:
        with self._lock:
            self._run, self._context = run, context
            stop = self._stop == run
        if stop:
            context.interrupt()

    def end(self) -> None:
        with self._lock:
            self._context = None

    def interrupt(self, run: int) -> None:
        with self._lock:
            self._stop = run
            context = self._context if self._run == run else None
        if context is not None:
            context.interrupt()


def _listen(control: int, current: _Current) -> None:
    with contextlib.suppress(OSError):
        while len(data := os.read(control, wire.RUN_NUMBER_BYTES)) == wire.RUN_NUMBER_BYTES:
            current.interrupt(int.from_bytes(data, "big"))


class _Conversation:
    """The child's ends of the pipes to the gateway."""

    def __init__(self, inbound: BinaryIO, outbound: BinaryIO) -> None:
        self.inbound = inbound
        self.outbound = outbound

    def forward(self, name: str) -> Callable[[str], str]:
        def call(text: str) -> str:
            try:
                frames.write(self.outbound, {"op": wire.CALL, "name": name}, [wire.blob(text)])
                frame = frames.read(self.inbound, MAX_FRAME_BYTES)
            except (OSError, frames.FrameError):
                frame = None
            if frame is None or frame[0].get("op") != wire.ANSWER or len(frame[1]) != 1:
                os._exit(1)  # the gateway went away or broke the conversation: nobody waits for this run
            return wire.text(frame[1][0])

        return call

    def done(self, end: str, text: str, lifted: bool) -> None:
        frames.write(self.outbound, {"op": wire.DONE, "end": end, "lifted": lifted}, [wire.blob(text)])


def serve(conversation: _Conversation, current: _Current) -> None:
    while (frame := frames.read(conversation.inbound, MAX_FRAME_BYTES)) is not None:
        header, blobs = frame
        if header.get("op") != wire.RUN or len(blobs) != 3:
            raise frames.FrameError("expected a run")
        _run(header, [wire.text(blob) for blob in blobs], conversation, current)
        del frame, blobs


class _Jobs:
    """A program's `drain`: the engine's promise jobs run in this process, and how the first failing one failed."""

    def __init__(self, context: engine.Context) -> None:
        self._context = context
        self.failure: Exception | None = None

    def drain(self, _: str) -> str:
        try:
            self._context.run_jobs()
        except engine.JSException as exc:  # interrupted, or out of memory outside any promise
            self.failure = self.failure or exc
        return ""


def _run(header: dict[str, Any], texts: list[str], conversation: _Conversation, current: _Current) -> None:
    source, input_text, fallback = texts
    kind = str(header.get("kind", "script"))
    context = engine.Context(memory_bytes=int(header["memory"]), stack_bytes=int(header["stack"]))
    current.begin(int(header["run"]), context)
    jobs = _Jobs(context)
    try:
        for name in wire.HOST_FUNCTIONS[kind]:
            context.expose(_GLOBALS[name], conversation.forward(name), fallback)
        if kind == "program":
            context.expose(program_prelude.DRAIN, jobs.drain, "")
        context.set_global(prelude.BODY, source)
        context.set_global(prelude.INPUT, input_text)
        context.set_global(prelude.MAX_CHARS, int(header["max_chars"]))
        try:
            answer = context.run(_SOURCES[kind], float(header["seconds"]))
            if jobs.failure is not None:  # a job was interrupted: whatever the prelude answered after that
                raise jobs.failure
        except engine.StackOverflow:
            end, text = wire.STACK, ""
        except engine.JSException as exc:
            end, text = wire.UNCAUGHT, str(exc)
        else:
            end, text = (wire.ENDED, answer) if isinstance(answer, str) else (wire.ODD, type(answer).__name__)
        lifted = context.host_calls_allowed
    finally:
        current.end()
        context.close()
    conversation.done(end, text, lifted)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    data_bytes, stack_bytes, control = (int(argument) for argument in sys.argv[1:4])
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:  # never above what this process may set
        data_bytes = min(data_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (data_bytes, data_bytes))
    outbound = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    conversation = _Conversation(sys.stdin.buffer, outbound)
    current = _Current()
    threading.stack_size(_LISTENER_STACK)
    threading.Thread(target=_listen, args=(control, current), daemon=True).start()
    threading.stack_size(stack_bytes)
    evaluator = threading.Thread(target=_serve_quietly, args=(conversation, current), name="apimcp-script")
    evaluator.start()
    evaluator.join()


def _serve_quietly(conversation: _Conversation, current: _Current) -> None:
    with contextlib.suppress(BrokenPipeError, frames.FrameError):  # the gateway went away
        serve(conversation, current)


if __name__ == "__main__":
    main()
