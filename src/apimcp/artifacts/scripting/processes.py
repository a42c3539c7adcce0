"""The processes scripts are evaluated in: a bounded pool, one run at a time per process.

A process (`apimcp.script_engine.child`) is started when a run finds none idle (and one when the pool is
made, so that a first run does not wait for an interpreter to start), reused by the next runs (each gets a
fresh engine), and replaced when it was killed or died. Its environment is only what Python needs to import
the child (`PYTHONPATH`): the gateway's variables, secrets among them, stay here. It runs at a lower
priority and with its data memory capped (`child`), and it exits when its input ends: when the pool closes,
or when the gateway dies. A pool belongs to the process that made it: a forked worker starts its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import weakref
from typing import IO

from apimcp.script_engine import wire
from apimcp.shaping import children

log = logging.getLogger("apimcp.artifacts.scripting")


class ScriptProcess:
    """One child process and its pipes: stdin and stdout for the conversation, a control pipe for interrupts."""

    def __init__(self, data_bytes: int, stack_bytes: int) -> None:
        control, self._control = os.pipe()
        try:
            self.popen = subprocess.Popen(
                [sys.executable, "-P", "-m", "apimcp.script_engine.child", str(data_bytes), str(stack_bytes),
                 str(control)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_environment(), pass_fds=(control,),
            )  # fmt: skip
        except BaseException:
            os.close(self._control)
            raise
        finally:
            os.close(control)
        os.set_blocking(self._control, False)  # written on the event loop: never wait for the child
        self.pid = self.popen.pid
        self.runs = 0
        """Runs sent so far; the number of the current one."""

    @property
    def stdin(self) -> IO[bytes]:
        assert self.popen.stdin is not None
        return self.popen.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.popen.stdout is not None
        return self.popen.stdout

    def alive(self) -> bool:
        return self.popen.poll() is None

    def interrupt(self, run: int) -> None:
        """Ask the child to interrupt run number `run` (ignored if that run has ended); any thread."""
        with contextlib.suppress(OSError):
            os.write(self._control, run.to_bytes(wire.RUN_NUMBER_BYTES, "big"))

    def kill(self) -> None:
        """Any thread; the process's pipes then end."""
        with contextlib.suppress(ProcessLookupError):
            self.popen.kill()

    def reap(self) -> int:
        """Kill the process, wait for it and close its pipes; its exit code."""
        self.kill()
        code = self.popen.wait()
        self.close_pipes()
        return code

    def close_pipes(self) -> None:
        children.close_pipes(self.popen)
        with contextlib.suppress(OSError):
            os.close(self._control)


def _environment() -> dict[str, str]:
    """What the child needs to import what this process imports, from the same places; nothing else."""
    return {"PYTHONPATH": children.import_path()}


class ScriptProcesses:
    """At most `capacity` processes, each running one script at a time; `close` stops them all."""

    def __init__(self, capacity: int, data_bytes: int, stack_bytes: int) -> None:
        self._capacity = capacity
        self._data_bytes = data_bytes
        self._stack_bytes = stack_bytes
        self._lock = threading.Lock()
        self._idle: list[ScriptProcess] = []
        self._live: set[ScriptProcess] = set()
        self._owner = os.getpid()
        self._reaper = weakref.finalize(self, _reap_all, self._live, self._owner)
        """A pool dropped without `close` (a runtime never shut down) still leaves no process behind."""
        self._closed = False

    @property
    def pids(self) -> list[int]:
        """The processes alive now, idle or running a script."""
        with self._lock:
            return sorted(process.pid for process in self._live)

    def prestart(self) -> None:
        """Start one process for the first run to find."""
        with self._lock:
            if self._idle or self._closed:
                return
        self.give_back(self._start())

    def take(self) -> ScriptProcess:
        """An idle process, else a new one; raises RuntimeError when closed or full (a caller's bug)."""
        with self._lock:
            self._forget_if_forked()
            while self._idle:
                process = self._idle.pop()
                if process.alive():
                    return process
                self._live.discard(process)
                process.close_pipes()
            if self._closed:
                raise RuntimeError("the script processes are closed")
            if len(self._live) >= self._capacity:
                raise RuntimeError(f"all {self._capacity} script processes are busy")
        return self._start()

    def _start(self) -> ScriptProcess:
        process = ScriptProcess(self._data_bytes, self._stack_bytes)
        with self._lock:
            self._live.add(process)
            closed = self._closed
        if closed:
            self.discard(process)
            raise RuntimeError("the script processes are closed")
        return process

    def _forget_if_forked(self) -> None:
        """Under the lock: in a forked child, the processes are the parent's (never touched here)."""
        if os.getpid() != self._owner:
            self._owner = os.getpid()
            self._reaper.detach()  # this child's copy: the parent's processes are the parent's to stop
            self._idle, self._live = [], set()
            self._reaper = weakref.finalize(self, _reap_all, self._live, self._owner)

    def give_back(self, process: ScriptProcess) -> None:
        """A process that ended its run cleanly, for the next one."""
        with self._lock:
            if not self._closed and process in self._live:
                self._idle.append(process)
                return
        self.discard(process)

    def discard(self, process: ScriptProcess) -> int:
        """Kill `process` (once it was killed, stuck, or died), wait for it; its exit code."""
        code = process.reap()
        with self._lock:
            self._live.discard(process)
        return code

    def close(self) -> None:
        """Stop every process: idle ones end with their input, busy ones are killed (their runs end at once)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = self._live.difference(idle)
        for late in children.stop([process.popen for process in idle], [process.popen for process in busy]):
            log.warning("script process %d did not stop with its input: killed", late.pid)
        for process in idle:
            self.discard(process)
        for process in busy:
            process.popen.wait()  # killed: at once; its run's thread closes its pipes
        self._reaper.detach()


def _reap_all(live: set[ScriptProcess], owner: int) -> None:
    """When a pool is collected unclosed, or at exit: kill and wait for its processes, close their pipes; never in
    a forked child, whose copies name the parent's processes."""
    if os.getpid() != owner:
        return
    for process in list(live):
        process.reap()
    live.clear()
