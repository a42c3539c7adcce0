"""The threads scripts run in, and who may have one.

`WorkerPool` is a bounded set of daemon threads created with an explicit stack size: QuickJS's
stack limit is checked against the thread's own stack, and some C libraries (musl) give new
threads only 128 KiB. Daemon, because a script stuck in one long built-in call (which QuickJS
does not interrupt) must not hold up the process's exit.

`Admission` hands out the right to a thread: at most `capacity` at once, `max_waiting` more
waiting in order, each for as long as its deadline allows. It is released from any thread.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
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


class Admission:
    def __init__(self, capacity: int, max_waiting: int) -> None:
        self._free = capacity
        self._max_waiting = max_waiting
        self._waiting: collections.deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = collections.deque()
        self._lock = threading.Lock()

    async def acquire(self, deadline: float) -> bool:
        """Take a place, waiting until `deadline` (`time.monotonic()`); False if none came or the queue is full."""
        loop = asyncio.get_running_loop()
        timeout = deadline - time.monotonic()
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return True
            if len(self._waiting) >= self._max_waiting or timeout <= 0:
                return False
            granted: asyncio.Future[None] = loop.create_future()
            self._waiting.append((loop, granted))
        try:
            async with asyncio.timeout(timeout):
                await granted
        except TimeoutError:
            self._withdraw(granted)
            return False
        except asyncio.CancelledError:
            self._withdraw(granted)
            raise
        return True

    def _withdraw(self, granted: asyncio.Future[None]) -> None:
        """Leave the queue; if a place was already handed over, pass it on (on the waiter's loop)."""
        with self._lock:
            for entry in self._waiting:
                if entry[1] is granted:
                    self._waiting.remove(entry)
                    return
        if granted.done() and not granted.cancelled():
            self.release()  # `_grant` ran: the place is ours to give back
        else:
            granted.cancel()  # `_grant` is on its way and will pass the place on

    def release(self) -> None:
        """Give a place back, to the first waiter if any (thread-safe)."""
        while True:
            with self._lock:
                if not self._waiting:
                    self._free += 1
                    return
                loop, granted = self._waiting.popleft()
            try:
                loop.call_soon_threadsafe(self._grant, granted)
                return
            except RuntimeError:  # that waiter's loop is closed: try the next one
                continue

    def _grant(self, granted: asyncio.Future[None]) -> None:
        if granted.done():  # timed out or cancelled after it was chosen
            self.release()
        else:
            granted.set_result(None)

    @property
    def waiting(self) -> int:
        return len(self._waiting)
