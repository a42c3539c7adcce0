"""A bounded pool of shaping processes, and the jobs the gateway hands it.

`workers` child processes (`child.py`), started when first needed and replaced when one dies, each run one
job at a time; a job waits for one at most `job_seconds`, counted with its run, and at most `max_waiting`
jobs wait: beyond, `run` refuses at once. Jobs come in lanes (one per exposition: `lane`), which take turns for
the next free process, and no lane holds more than half of the pool's places (running and waiting), so that one
exposition flooding the pool with large answers leaves the others room and a short wait. A job past its time, or
whose caller went away, has its process killed (a process in the middle of a job cannot be told to drop it), and
the next job gets a new one. Every way a job can fail is a `ShapingUnavailable` whose message can be shown to the
client: a call is never left waiting.

The children are plain `subprocess` processes (no multiprocessing machinery, no fork of a threaded
gateway), talking over their stdin and stdout (`frames`); each job's blocking writes and reads run in a thread
of their own, which holds the interpreter only to copy bytes, so the event loop only waits for the result.
They exit when their input ends: when the pool closes, or when the gateway dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Protocol

from apimcp.shaping import children, frames
from apimcp.shaping.limits import ShapingLimits
from apimcp.shaping.names import name_of

log = logging.getLogger("apimcp.shaping")

Job = Callable[[dict[str, Any], list[bytes]], tuple[dict[str, Any], list[bytes]]]
"""What a shaping process runs: (small JSON-able arguments, byte blobs) → (a small JSON-able reply, blobs). A
module-level function: the child finds it by its module and name."""

REPLY_ALLOWANCE: Final = 64 * 1024 * 1024
"""What a reply may hold beyond four times what its job was sent (a filter's patches add within their budget)."""


class ShapingUnavailable(Exception):
    """A job that could not run or finish; the message says why, in words for the client."""


@dataclass(frozen=True, slots=True)
class Done:
    """What a job gave back, and the process that ran it."""

    reply: dict[str, Any]
    blobs: list[bytes]
    pid: int


class Shaper(Protocol):
    async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
        """Run `job`; raises ShapingUnavailable."""
        ...


class InlineShaping:
    """Jobs run at once, in this process: for handlers built without a gateway runtime (tests, embedding), where
    no pool was given. The gateway runtime always gives its `ShapingPool`."""

    async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
        try:
            reply, out = job(dict(args), list(blobs))
        except Exception as exc:
            raise _failed(job, type(exc).__name__) from exc
        return Done(reply, out, os.getpid())


INLINE: Final = InlineShaping()


def _failed(job: Job, error: str) -> ShapingUnavailable:
    log.error("shaping job %s failed: %s", name_of(job), error)
    return ShapingUnavailable(f"Shaping this large result failed in the gateway ({error})")


class _Ticket:
    """One job's hold on the process running it, so that its caller can give up on it from the event loop."""

    __slots__ = ("abandoned", "deadline", "lock", "process")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self.abandoned = False

    def hold(self, process: subprocess.Popen[bytes]) -> bool:
        with self.lock:
            if self.abandoned:
                return False
            self.process = process
            return True

    def release(self) -> bool:
        """Done with the process; whether it was killed meanwhile (it cannot be used again)."""
        with self.lock:
            self.process = None
            return self.abandoned

    def abandon(self) -> None:
        with self.lock:
            self.abandoned = True
            if self.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()


@dataclass(frozen=True, slots=True)
class _Waiting:
    """A job handed to the pool, until a process is free for it."""

    ticket: _Ticket
    pieces: list[bytes]
    future: Future[Done]


class ShapingPool:
    """One gateway process's shaping processes (`ShapingLimits`); `close` stops them."""

    def __init__(self, limits: ShapingLimits | None = None) -> None:
        self.limits = limits or ShapingLimits()
        self._lock = threading.Lock()
        self._idle: list[subprocess.Popen[bytes]] = []
        self._live: set[subprocess.Popen[bytes]] = set()
        self._pending = 0
        """Jobs submitted and not finished: running ones and waiting ones."""
        self._held: dict[str | None, int] = {}
        """The same, per lane that has any."""
        self.lane_share = max(self.limits.workers, (self.limits.workers + self.limits.max_waiting + 1) // 2)
        """How many of the pool's places (running and waiting) one lane may hold."""
        self._waiting: dict[str | None, deque[_Waiting]] = {}
        self._turns: deque[str | None] = deque()
        """The lanes with jobs waiting, in the order they get the next free process."""
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    def lane(self, name: str) -> Shaper:
        """This pool as one exposition uses it: its jobs take turns with other lanes' (`run(..., lane=name)`)."""
        return _Lane(self, name)

    @property
    def pids(self) -> list[int]:
        """The shaping processes alive now."""
        with self._lock:
            return sorted(process.pid for process in self._live)

    async def run(
        self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = (), lane: str | None = None
    ) -> Done:
        """Run `job` (raises ShapingUnavailable); `lane`: whose job it is (None: no one's in particular, never held
        to a share)."""
        limits = self.limits
        pieces = frames.pieces({"job": name_of(job), "args": args}, blobs)
        ticket = _Ticket(time.monotonic() + limits.job_seconds)
        future: Future[Done] = Future()
        with self._lock:
            if self._closed:
                raise ShapingUnavailable("The gateway is stopping")
            if self._pending >= limits.workers + limits.max_waiting:
                raise ShapingUnavailable(
                    f"The gateway is shaping as many large results as it can ({limits.workers} at once, "
                    f"{limits.max_waiting} waiting): try again shortly"
                )
            held = self._held.get(lane, 0)
            if lane is not None and held >= self.lane_share:
                raise ShapingUnavailable(
                    f"The gateway is shaping as many large results for this exposition as one may ({held} at once "
                    "or waiting): try again shortly"
                )
            self._pending += 1
            self._held[lane] = held + 1
            queue = self._waiting.get(lane)
            if queue is None:
                queue = self._waiting[lane] = deque()
                self._turns.append(lane)
            queue.append(_Waiting(ticket, pieces, future))
            if self._executor is None:
                self._executor = ThreadPoolExecutor(limits.workers, thread_name_prefix="apimcp-shaping")
            self._executor.submit(self._next)  # one turn per job: which job it runs is chosen when it starts
        future.add_done_callback(lambda _: self._finished(lane))
        try:
            done = await asyncio.wait_for(asyncio.wrap_future(future), limits.job_seconds)
        except TimeoutError:
            ticket.abandon()
            raise ShapingUnavailable(
                f"Shaping this large result took longer than the {limits.job_seconds:g} s allowed"
            ) from None
        except asyncio.CancelledError:
            ticket.abandon()
            raise
        if not done.reply.get("ok"):
            raise _failed(job, str(done.reply.get("error")))
        return Done(done.reply.get("reply") or {}, done.blobs, done.pid)

    def _finished(self, lane: str | None) -> None:
        with self._lock:
            self._pending -= 1
            held = self._held.pop(lane) - 1
            if held:
                self._held[lane] = held

    # --- in the pool's threads ------------------------------------------------------------------

    def _next(self) -> None:
        """Run the next job: the first waiting of the lane whose turn it is (that lane then goes last)."""
        with self._lock:
            if not self._turns:
                return  # the pool closed: its jobs were told
            lane = self._turns.popleft()
            queue = self._waiting[lane]
            waiting = queue.popleft()
            if queue:
                self._turns.append(lane)
            else:
                del self._waiting[lane]
        if not waiting.future.set_running_or_notify_cancel():
            return  # its caller gave up while it waited
        try:
            done = self._execute(waiting.ticket, waiting.pieces)
        except BaseException as exc:
            waiting.future.set_exception(exc)
        else:
            waiting.future.set_result(done)

    def _execute(self, ticket: _Ticket, pieces: list[bytes]) -> Done:
        """Send one job to a process and read its reply (the reply's `ok` is checked by the caller)."""
        if time.monotonic() >= ticket.deadline:
            raise ShapingUnavailable("expired while waiting")  # its caller has had its answer
        process = self._take()
        if not ticket.hold(process):
            self._give_back(process)
            raise ShapingUnavailable("abandoned while waiting")
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None
        assert stdout is not None
        try:
            for piece in pieces:
                stdin.write(piece)
            stdin.flush()
            frame = frames.read(stdout, 4 * sum(map(len, pieces)) + REPLY_ALLOWANCE)
            if frame is None:
                raise frames.FrameError("the process ended")
        except (OSError, ValueError, frames.FrameError) as exc:
            ticket.release()
            code = self._discard(process)
            if not ticket.abandoned:
                log.warning("a shaping process stopped during a job (%s, %s); the next job starts a new one",
                            children.how(code), type(exc).__name__)  # fmt: skip
            raise ShapingUnavailable(
                f"The process shaping this large result stopped ({children.how(code)}): try again"
            ) from None
        if ticket.release():
            self._discard(process)
        else:
            self._give_back(process)
        header, blobs = frame
        return Done(header, blobs, int(header.get("pid", 0)))

    def _take(self) -> subprocess.Popen[bytes]:
        with self._lock:
            while self._idle:
                process = self._idle.pop()
                if process.poll() is None:
                    return process
                self._live.discard(process)
                children.close_pipes(process)
        process = _start()
        with self._lock:
            self._live.add(process)
            closed = self._closed
        if closed:
            self._discard(process)
            raise ShapingUnavailable("The gateway is stopping")
        return process

    def _give_back(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(process)
                return
        self._discard(process)

    def _discard(self, process: subprocess.Popen[bytes]) -> int:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        code = process.wait()
        children.close_pipes(process)
        with self._lock:
            self._live.discard(process)
        return code

    # --- stopping ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop every process: idle ones end with their input, busy ones are killed (their callers are told)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = self._live.difference(idle)
            executor, self._executor = self._executor, None
        children.stop(idle, busy)
        with self._lock:
            self._live.difference_update(idle)
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)  # its threads end with their killed processes
        with self._lock:
            left = [waiting for queue in self._waiting.values() for waiting in queue]
            self._waiting.clear()
            self._turns.clear()
        for waiting in left:
            if waiting.future.set_running_or_notify_cancel():
                waiting.future.set_exception(ShapingUnavailable("The gateway is stopping"))


class _Lane:
    """A pool's jobs of one lane (`ShapingPool.lane`)."""

    __slots__ = ("_name", "_pool")

    def __init__(self, pool: ShapingPool, name: str) -> None:
        self._pool = pool
        self._name = name

    async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
        return await self._pool.run(job, args, blobs, self._name)


def _start() -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": children.import_path()}
    return subprocess.Popen(
        [sys.executable, "-P", "-m", "apimcp.shaping.child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
