"""Total deadlines for many short waits, at the cost of one timer per grain of time instead of one per wait.

Reading a request body must end within a total time, or a client sending one
byte every few seconds holds a request forever; a backend call too. A timer per
wait (`asyncio.timeout`: about 4 µs) would cost more than the rest of reading a
small body, and a noticeable part of a backend call. So the waits that start
within the same grain (a second by default) share one set and one timer, armed
`seconds` after that grain ends: a wait is cancelled between `seconds` and
`seconds + grain` after it started, and a wait that ends in time costs a set
insertion and a removal.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

Task = asyncio.Task[Any]


class SharedDeadline:
    """Cancels the tasks still watched `seconds` (to `seconds + grain`) after they began to be watched."""

    __slots__ = ("_grain", "_loop", "_second", "_second_ends", "_seconds", "expired")

    def __init__(self, seconds: float, grain: float = 1.0) -> None:
        if seconds <= 0 or grain <= 0:
            raise ValueError("seconds and grain must be positive")
        self._seconds = seconds
        self._grain = grain
        self._loop: asyncio.AbstractEventLoop | None = None
        self._second: set[Task] = set()
        self._second_ends = -math.inf
        self.expired: set[Task] = set()
        """Tasks this deadline cancelled and whose wait has not taken the cancellation back yet (`Watch.timed_out`)."""

    def watch(self) -> Watch:
        """Start watching the current task, until `Watch.done`."""
        loop = self._loop
        task = asyncio.current_task(loop) if loop is not None else None  # cheaper with the loop given
        if loop is None or task is None:  # first use, or another loop serves now (tests)
            loop = self._loop = asyncio.get_running_loop()
            self._second_ends = -math.inf
            task = asyncio.current_task(loop)
            assert task is not None, "watch() runs inside a task"
        now = loop.time()
        if now >= self._second_ends:
            grain = self._grain
            self._second_ends = (math.floor(now / grain) + 1) * grain
            self._second = set()
            loop.call_at(self._second_ends + self._seconds, self._expire, self._second)
        self._second.add(task)
        return Watch(self, task, self._second)

    def _expire(self, tasks: set[Task]) -> None:
        for task in tasks:
            self.expired.add(task)
            task.cancel()


class Watch:
    """One task's wait under a `SharedDeadline`:

    watch = deadline.watch()
    try:
        ...  # the wait
    except asyncio.CancelledError:
        if not watch.timed_out():
            raise
        ...  # say the wait took too long
    finally:
        watch.done()
    """

    __slots__ = ("_cancelling", "_deadline", "_task", "_tasks")

    def __init__(self, deadline: SharedDeadline, task: Task, tasks: set[Task]) -> None:
        self._deadline = deadline
        self._task = task
        self._tasks = tasks
        self._cancelling = task.cancelling()

    def timed_out(self) -> bool:
        """In the `except CancelledError` of the wait: whether the deadline cancelled it and nothing else did; then
        the cancellation is taken back (the task goes on). The deadline's is taken back in any case, so that a
        cancellation from elsewhere that came meanwhile is the one that goes on."""
        task, expired = self._task, self._deadline.expired
        if task not in expired:
            return False
        expired.discard(task)
        return task.uncancel() <= self._cancelling

    def done(self) -> None:
        """The wait is over: the deadline no longer cancels the task."""
        self._tasks.discard(self._task)
