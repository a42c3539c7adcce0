"""Where tasks live, so that any replica answers for any task.

The replica running a task writes its record; the one a client reaches reads it, records the client's input
responses, or cancels it. Cancelling and finishing both end a task, and whichever comes first stays: `update`
never changes a task that has ended. Every store keeps its `TaskLimits` (`limits.py`): a task beyond them is
refused with `TasksFull`, a live one is never dropped. `MemoryTaskStore` serves one process;
`apimcp.state.redis_tasks` is shared by replicas (and keeps the limits across them).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping

from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.tasks.limits import TaskLimits, TasksFull, owner_bytes_full, owner_full, store_full
from apimcp.protocol.tasks.records import StoredTask, TaskRecord


class TaskStore(ABC):
    """Records of tasks and the input responses sent to them."""

    limits: TaskLimits

    @abstractmethod
    async def create(self, record: TaskRecord) -> bool:
        """Keep a new task, readable by every replica once this returns; False when the id is taken. Raises
        `TasksFull` when its owner, or the store, has no room for it."""

    @abstractmethod
    async def get(self, task_id: str) -> StoredTask | None:
        """The task and the responses sent to it; None when unknown or expired."""

    @abstractmethod
    async def update(self, record: TaskRecord) -> bool:
        """Replace a task's record unless the task has ended (or is gone); whether it was replaced. Raises
        `TasksFull` when the record brings a result its owner's tasks, or the store, have no room for
        (`max_bytes_per_owner`, `max_bytes`)."""

    @abstractmethod
    async def respond(self, task_id: str, responses: Mapping[str, JsonObject]) -> None:
        """Add input responses (a key answered already keeps its first answer)."""

    @abstractmethod
    async def of_session(self, session_id: str) -> list[TaskRecord]:
        """The live tasks a session created, newest first."""

    @abstractmethod
    async def changed(self, task_id: str, wait_seconds: float) -> None:
        """Return when the task may have changed, or after `wait_seconds`."""


class MemoryTaskStore(TaskStore):
    """Tasks of one process, within its limits."""

    def __init__(self, limits: TaskLimits | None = None) -> None:
        self.limits = limits or TaskLimits()
        self._tasks: dict[str, tuple[TaskRecord, dict[str, JsonObject]]] = {}
        self._owned: dict[str, set[str]] = {}
        self._weight = 0
        self._owner_weight: dict[str, int] = {}
        self._signals: dict[str, asyncio.Event] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def _expire(self) -> None:
        now = time.time()
        for task_id in [t for t, (r, _) in self._tasks.items() if r.expires_at <= now]:
            self._drop(task_id)

    def _drop(self, task_id: str) -> None:
        record, _ = self._tasks.pop(task_id)
        self._weigh(record.quota, -record.weight)
        owned = self._owned.get(record.quota)
        if owned is not None:
            owned.discard(task_id)
            if not owned:
                del self._owned[record.quota]
        self._signal(task_id)

    def _signal(self, task_id: str) -> None:
        event = self._signals.pop(task_id, None)
        if event is not None:
            event.set()

    def _live(self, task_id: str) -> tuple[TaskRecord, dict[str, JsonObject]] | None:
        entry = self._tasks.get(task_id)
        if entry is not None and entry[0].expires_at <= time.time():
            self._drop(task_id)
            return None
        return entry

    def _weigh(self, quota: str, growth: int) -> None:
        self._weight += growth
        held = self._owner_weight.get(quota, 0) + growth
        if held > 0:
            self._owner_weight[quota] = held
        else:
            self._owner_weight.pop(quota, None)

    def _over(self, quota: str, growth: int) -> TasksFull | None:
        """The byte bound `growth` more bytes of `quota`'s would pass (the store's first), or None."""
        if self._weight + growth > self.limits.max_bytes:
            return store_full("max_bytes")
        if self._owner_weight.get(quota, 0) + growth > self.limits.max_bytes_per_owner:
            return owner_bytes_full(self.limits)
        return None

    def _no_room(self, quota: str, growth: int) -> TasksFull | None:
        if self._over(quota, growth) is None:
            return None
        self._expire()  # expired tasks make room
        return self._over(quota, growth)

    async def create(self, record: TaskRecord) -> bool:
        if self._live(record.task_id) is not None:
            return False  # an id taken already: never replace someone else's task
        limits = self.limits
        if len(self._owned.get(record.quota, ())) >= limits.max_tasks_per_owner:
            for task_id in list(self._owned[record.quota]):
                self._live(task_id)  # the owner's expired tasks make room
            if len(self._owned.get(record.quota, ())) >= limits.max_tasks_per_owner:
                raise owner_full(limits)
        if len(self._tasks) >= limits.max_tasks:
            self._expire()
            if len(self._tasks) >= limits.max_tasks:
                raise store_full("max_tasks")
        if (refusal := self._no_room(record.quota, record.weight)) is not None:
            raise refusal
        self._tasks[record.task_id] = (record, {})
        self._owned.setdefault(record.quota, set()).add(record.task_id)
        self._weigh(record.quota, record.weight)
        return True

    async def get(self, task_id: str) -> StoredTask | None:
        entry = self._live(task_id)
        return StoredTask(entry[0], dict(entry[1])) if entry is not None else None

    async def update(self, record: TaskRecord) -> bool:
        entry = self._live(record.task_id)
        if entry is None or entry[0].terminal:
            return False
        growth = record.weight - entry[0].weight
        if record.result is not None and growth > 0 and (refusal := self._no_room(record.quota, growth)) is not None:
            raise refusal
        self._tasks[record.task_id] = (record, entry[1])
        self._weigh(record.quota, growth)
        self._signal(record.task_id)
        return True

    async def respond(self, task_id: str, responses: Mapping[str, JsonObject]) -> None:
        entry = self._live(task_id)
        if entry is None:
            return
        for key, value in responses.items():
            entry[1].setdefault(key, value)
        self._signal(task_id)

    async def of_session(self, session_id: str) -> list[TaskRecord]:
        self._expire()
        found = [r for r, _ in self._tasks.values() if r.session_id == session_id]
        return sorted(found, key=lambda r: r.created_at, reverse=True)

    async def changed(self, task_id: str, wait_seconds: float) -> None:
        event = self._signals.get(task_id)
        if event is None:
            event = self._signals[task_id] = asyncio.Event()
        try:
            async with asyncio.timeout(wait_seconds):
                await event.wait()
        except TimeoutError:
            pass
