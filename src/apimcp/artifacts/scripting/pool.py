"""The threads that relay scripts to their processes, and who may have one.

`WorkerPool` is a bounded set of daemon threads created with an explicit stack size (some C libraries,
musl, give new threads only 128 KiB). Each one relays one run at a time between its script process and
the run's host functions (`sandbox`); daemon, so that a relay never holds up the process's exit.

`Admission` hands out the right to a thread, shared fairly between expositions: at most
`capacity` at once and a cap per exposition, each exposition's waiters in a bounded queue of its
own, each waiting for as long as its deadline allows. It is released from any thread.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_stack_size_lock = threading.Lock()


class WorkerPool:
    def __init__(self, threads: int, stack_bytes: int, name: str) -> None:
        self._max = threads
        self._stack_bytes = stack_bytes
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._unfinished = 0
        self._closed = False

    def submit(self, job: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                if future.set_running_or_notify_cancel():
                    future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)
            finally:
                with self._lock:
                    self._unfinished -= 1

        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            self._unfinished += 1
            if self._unfinished > len(self._threads) and len(self._threads) < self._max:
                self._spawn()
            self._jobs.put(run)  # with all threads busy it waits: Admission makes that the exception
        return future

    def _spawn(self) -> None:
        thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True)
        with _stack_size_lock:  # the size is process-wide: set it only around this start
            previous = threading.stack_size(self._stack_bytes)
            try:
                thread.start()
            finally:
                threading.stack_size(previous)
        self._threads.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()
            del job  # an idle thread holds nothing of its last run (its runner may be collected, processes and all)

    @property
    def threads(self) -> int:
        return len(self._threads)

    def close(self) -> None:
        """Let each thread end after its current job; new jobs are refused."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in self._threads:
                self._jobs.put(None)


_Waiter = tuple[int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]
"""(arrival number, the waiter's loop, what its grant completes)."""


class Admission:
    """The right to a worker thread, shared fairly between the shares (expositions) asking for one.

    At most `capacity` places are taken at once, at most `per_share` of them by one share, and at most
    `max_waiting` runs of one share wait, each until its deadline: a share flooding the pool takes its
    cap and fills its own queue, and the other shares still find places. A freed place goes to the
    share holding the fewest, then to the oldest waiter. Places are released from any thread.
    """

    def __init__(self, capacity: int, per_share: int, max_waiting: int) -> None:
        self._free = capacity
        self._per_share = min(per_share, capacity)
        self._max_waiting = max_waiting
        self._held: dict[str, int] = {}
        self._waiting: dict[str, collections.deque[_Waiter]] = {}
        self._arrivals = itertools.count()
        self._lock = threading.Lock()

    async def acquire(self, share: str, deadline: float) -> bool:
        """Take a place for `share`, waiting until `deadline` (`time.monotonic()`); False if none came in
        time or the share's queue is full."""
        loop = asyncio.get_running_loop()
        timeout = deadline - time.monotonic()
        with self._lock:
            queue = self._waiting.get(share)
            if self._free and self._held.get(share, 0) < self._per_share and not queue:
                self._take(share)
                return True
            if (queue is not None and len(queue) >= self._max_waiting) or self._max_waiting == 0 or timeout <= 0:
                return False
            granted: asyncio.Future[None] = loop.create_future()
            self._waiting.setdefault(share, collections.deque()).append((next(self._arrivals), loop, granted))
        try:
            async with asyncio.timeout(timeout):
                await granted
        except TimeoutError:
            self._withdraw(share, granted)
            return False
        except asyncio.CancelledError:
            self._withdraw(share, granted)
            raise
        return True

    def _take(self, share: str) -> None:
        """Under the lock."""
        self._free -= 1
        self._held[share] = self._held.get(share, 0) + 1

    def _untake(self, share: str) -> None:
        """Under the lock."""
        self._free += 1
        held = self._held[share] - 1
        if held:
            self._held[share] = held
        else:
            del self._held[share]

    def _withdraw(self, share: str, granted: asyncio.Future[None]) -> None:
        """Leave the queue; if a place was already handed over, pass it on (on the waiter's loop)."""
        with self._lock:
            queue = self._waiting.get(share)
            entry = next((entry for entry in queue or () if entry[2] is granted), None)
            if queue is not None and entry is not None:
                queue.remove(entry)
                if not queue:
                    del self._waiting[share]
                return
        if granted.done() and not granted.cancelled():
            self.release(share)  # `_grant` ran: the place is ours to give back
        else:
            granted.cancel()  # `_grant` is on its way and will pass the place on

    def release(self, share: str) -> None:
        """Give back a place `share` holds; waiters get it first (thread-safe)."""
        with self._lock:
            self._untake(share)
        self._hand_over()

    def _hand_over(self) -> None:
        while True:
            with self._lock:
                chosen = self._next() if self._free else None
                if chosen is None:
                    return
                queue = self._waiting[chosen]
                _, loop, granted = queue.popleft()
                if not queue:
                    del self._waiting[chosen]
                self._take(chosen)  # held for the waiter from now on
            try:
                loop.call_soon_threadsafe(self._grant, chosen, granted)
            except RuntimeError:  # that waiter's loop is closed: try the next one
                with self._lock:
                    self._untake(chosen)

    def _next(self) -> str | None:
        """Under the lock: the share a free place goes to (fewest held, then the oldest waiter), if any."""
        eligible = [(held, queue[0][0], share) for share, queue in self._waiting.items()
                    if (held := self._held.get(share, 0)) < self._per_share]  # fmt: skip
        return min(eligible)[2] if eligible else None

    def _grant(self, share: str, granted: asyncio.Future[None]) -> None:
        if granted.done():  # timed out or cancelled after it was chosen
            self.release(share)
        else:
            granted.set_result(None)

    @property
    def waiting(self) -> int:
        return sum(len(queue) for queue in self._waiting.values())

    def held(self, share: str) -> int:
        """Places `share` holds now (a place handed to a waiter counts from the moment it is chosen)."""
        return self._held.get(share, 0)
