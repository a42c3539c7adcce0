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
from apimcp.artifacts.scripting.script import Script
from apimcp.protocol.errors import SERVER_BUSY, McpError
from apimcp.protocol.models import CallToolResult


class ScriptRunner:
    """Runs scripts in a bounded pool of worker threads, never on the event loop.

    Each nesting depth (0 to `max_depth`) has its own `workers` places: a script waiting for a
    scripted tool it called never holds the place that tool needs, so nesting cannot deadlock
    the pool. A run waits for a place (at most `max_queued` runs wait per depth, each until its
    deadline) and is otherwise refused with an `McpError` SERVER_BUSY. A place is held until the
    worker thread really stops, even when the caller was answered at the deadline.
    """

    def __init__(self, limits: ScriptLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        levels = limits.max_depth + 1
        self._admissions = [Admission(limits.workers, limits.max_queued) for _ in range(levels)]
        # Python frames and QuickJS's own C recursion sit on top of the JavaScript stack limit.
        stack = max(8 * 2**20, limits.stack_bytes + 4 * 2**20)
        self._pool = WorkerPool(limits.workers * levels, stack, "apimcp-script")
        self._running = 0
        self._lock = threading.Lock()
        self._closed = False

    @property
    def running(self) -> int:
        """Scripts executing in worker threads now (including ones whose caller gave up)."""
        return self._running

    async def run(self, script: Script, arguments: Mapping[str, Any], invoke: Invoke, depth: int = 0) -> CallToolResult:
        """Run `script` on `arguments`; `invoke` reaches the tools it calls, one level deeper.

        Returns the tool result (an error result for anything the script or its limits caused);
        raises `McpError` (SERVER_BUSY) when no worker is free in time.
        """
        name = script.tool_name
        limits = self.limits
        deadline = time.monotonic() + limits.timeout_seconds
        if depth > limits.max_depth:
            return outcome.error(
                f"Custom tool '{name}' is nested too deeply: scripts calling scripts may go "
                f"{limits.max_depth} levels deep"
            )
        if self._closed:
            raise McpError(SERVER_BUSY, f"Custom tool '{name}' cannot run: the script runner is closed")
        try:
            input_text = dumps(arguments)
        except TypeError:
            return outcome.error(f"Custom tool '{name}' was given arguments that are not JSON")
        admission = self._admissions[depth]
        if not await admission.acquire(deadline):
            raise McpError(
                SERVER_BUSY,
                f"Custom tool '{name}' cannot run now: all {limits.workers} script workers are busy",
            )
        loop = asyncio.get_running_loop()
        host = Host(script, limits, invoke, depth, loop, deadline)
        try:
            work = self._pool.submit(lambda: sandbox.execute(script, input_text, host, limits))
        except RuntimeError:  # closed meanwhile
            admission.release()
            raise McpError(SERVER_BUSY, f"Custom tool '{name}' cannot run: the script runner is closed") from None
        with self._lock:
            self._running += 1
        work.add_done_callback(lambda _: self._ended(admission, host))
        done = _bridge(work, loop)
        try:
            async with asyncio.timeout(deadline - time.monotonic()):
                return await asyncio.shield(done)
        except TimeoutError:
            host.stop(host.timeout_message())
            return outcome.error(host.timeout_message())
        except asyncio.CancelledError:
            host.stop(f"Custom tool '{name}' was cancelled")
            raise

    def _ended(self, admission: Admission, host: Host) -> None:
        host.finish()
        with self._lock:
            self._running -= 1
        admission.release()

    def close(self) -> None:
        """Refuse new runs and let the worker threads end after their current script."""
        self._closed = True
        self._pool.close()


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
