"""Runs scripted custom tools: admission, the worker pool, the deadline and cancellation."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Mapping
from typing import Any

from apimcp.artifacts.scripting import outcome, sandbox
from apimcp.artifacts.scripting.host import Host, Invoke, dumps
from apimcp.artifacts.scripting.limits import DEFAULT_LIMITS, ScriptLimits
from apimcp.artifacts.scripting.pool import Admission, WorkerPool
from apimcp.artifacts.scripting.processes import ScriptProcesses
from apimcp.artifacts.scripting.script import Script
from apimcp.protocol.errors import SERVER_BUSY, McpError
from apimcp.protocol.models import CallToolResult
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

_RELAY_STACK_BYTES = 4 * 2**20
"""A worker thread only relays (the engine runs in a process): Python frames of the host functions."""


class ScriptRunner:
    """Runs scripts in a bounded pool of script processes, relayed by worker threads, never on the event loop.

    Each nesting depth (0 to `max_depth`) has its own `workers` places: a script waiting for a
    scripted tool it called never holds the place that tool needs, so nesting cannot deadlock
    the pool. The places of a depth are shared fairly between expositions (`Admission`, keyed by
    the `share` a run names): one exposition holds at most `exposition_workers` of them, and at
    most `max_queued` of its runs wait, each until its deadline; beyond, a run is refused with an
    `McpError` SERVER_BUSY.

    Each running script holds one worker thread, which relays between its process and its `Host`
    (`sandbox`), and one process. At the deadline, or when the caller goes away, the run is stopped (its
    calls cancelled, its JavaScript interrupted, its process killed after a short grace) and its place is
    free before the caller hears of it. A stopped run's thread and process stay busy for that grace at most:
    `workers` more threads and processes than places cover them (beyond, a run waits that long for a thread).
    """

    def __init__(self, limits: ScriptLimits = DEFAULT_LIMITS, large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES) -> None:
        """`large_from_bytes`: results this large are passed on unparsed (`outcome.returned`)."""
        self.limits = limits
        self._large_from_bytes = large_from_bytes
        levels = limits.max_depth + 1
        self._admissions = [
            Admission(limits.workers, limits.exposition_workers, limits.max_queued) for _ in range(levels)
        ]
        capacity = limits.workers * levels + limits.workers  # the places, and runs in their grace
        self._pool = WorkerPool(capacity, _RELAY_STACK_BYTES, "apimcp-script")
        # Python frames and QuickJS's own C recursion sit on top of the JavaScript stack limit.
        stack = max(8 * 2**20, limits.stack_bytes + 4 * 2**20)
        data = limits.memory_bytes + stack + limits.process_overhead_bytes
        self._processes = ScriptProcesses(capacity, data, stack)
        self._processes.prestart()
        self._hosts: set[Host] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pids(self) -> list[int]:
        """The script processes alive now."""
        return self._processes.pids

    @property
    def running(self) -> int:
        """Scripts running now (including stopped ones in their grace)."""
        return len(self._hosts)

    def held(self, share: str, depth: int = 0) -> int:
        """Places `share` holds at `depth` now."""
        return self._admissions[depth].held(share)

    async def run(
        self,
        script: Script,
        arguments: Mapping[str, Any],
        invoke: Invoke,
        depth: int = 0,
        share: str = "",
        limits: ScriptLimits | None = None,
    ) -> CallToolResult:
        """Run `script` on `arguments` for `share` (its exposition); `invoke` reaches the tools it calls, one
        level deeper. `limits` replaces the runner's time, calls and result size for this run (code mode's); its
        memory and stack must not exceed the runner's, which sized the script processes.

        Returns the tool result (an error result for anything the script or its limits caused);
        raises `McpError` (SERVER_BUSY) when no worker is free in time, and what a call it made needs the user to
        supply first (`Host.needs_input`).
        """
        name = script.subject
        limits = limits or self.limits
        if limits.memory_bytes > self.limits.memory_bytes or limits.stack_bytes > self.limits.stack_bytes:
            raise ValueError("a run's memory and stack must fit the script processes")
        deadline = time.monotonic() + limits.timeout_seconds
        workers, max_depth = self.limits.workers, self.limits.max_depth
        if depth > max_depth:
            return outcome.error(f"{name} is nested too deeply: scripts calling scripts may go {max_depth} levels deep")
        if self._closed:
            raise McpError(SERVER_BUSY, f"{name} cannot run: the script runner is closed")
        try:
            input_text = dumps(arguments)
        except TypeError:
            return outcome.error(f"{name} was given arguments that are not JSON")
        admission = self._admissions[depth]
        if not await admission.acquire(share, deadline):
            cap = min(self.limits.exposition_workers, self.limits.workers)
            raise McpError(
                SERVER_BUSY,
                f"{name} cannot run now: all {workers} script workers are busy"
                if admission.held(share) < cap or cap == workers
                else f"{name} cannot run now: its exposition's {cap} of the {workers} script workers are busy",
            )
        place = _Place(admission, share)
        loop = asyncio.get_running_loop()
        host = Host(script, limits, invoke, depth, loop, deadline)
        try:
            large, processes = self._large_from_bytes, self._processes
            work = self._pool.submit(lambda: sandbox.execute(script, input_text, host, limits, processes, large))
        except RuntimeError:  # closed meanwhile
            admission.release(share)
            raise McpError(SERVER_BUSY, f"{name} cannot run: the script runner is closed") from None
        with self._lock:
            self._hosts.add(host)
        work.add_done_callback(lambda _: self._ended(place, host))
        done = _bridge(work, loop)
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                result = await asyncio.shield(done)
        except TimeoutError:
            self._stop(place, host, host.timeout_message())
            return outcome.error(host.timeout_message())
        except asyncio.CancelledError:
            self._stop(place, host, f"{name} was cancelled")
            raise
        if host.needs_input is not None:
            raise host.needs_input
        return result

    def _stop(self, place: _Place, host: Host, reason: str) -> None:
        """The caller is answered without the script: stop it, and free its place now (its thread and process
        follow within the grace)."""
        host.stop(reason)
        self._release(place)

    def _ended(self, place: _Place, host: Host) -> None:
        """In the worker thread, once its script has ended."""
        host.finish()
        with self._lock:
            self._hosts.discard(host)
        self._release(place)

    def _release(self, place: _Place) -> None:
        with self._lock:
            release, place.held = place.held, False
        if release:
            place.admission.release(place.share)

    def close(self) -> None:
        """Refuse new runs, stop the running ones and their processes; the worker threads end with them."""
        self._closed = True
        with self._lock:
            hosts = list(self._hosts)
        for host in hosts:
            host.stop("The gateway is stopping")
        self._pool.close()
        self._processes.close()


class _Place:
    """A run's place in an `Admission`, released once: when its caller is answered or when its thread ends."""

    __slots__ = ("admission", "held", "share")

    def __init__(self, admission: Admission, share: str) -> None:
        self.admission = admission
        self.share = share
        self.held = True


def _bridge(
    work: concurrent.futures.Future[CallToolResult], loop: asyncio.AbstractEventLoop
) -> asyncio.Future[CallToolResult]:
    """An asyncio future for `work`, quiet if the loop is gone by the time the worker ends."""
    done: asyncio.Future[CallToolResult] = loop.create_future()

    def copy(_: concurrent.futures.Future[CallToolResult]) -> None:
        if done.done():
            return
        failure = work.exception()  # only a bug: `sandbox.execute` answers every ending with a result
        if failure is None:
            done.set_result(work.result())
        else:
            done.set_exception(failure)

    def landed(_: concurrent.futures.Future[CallToolResult]) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(copy, work)

    work.add_done_callback(landed)
    return done
