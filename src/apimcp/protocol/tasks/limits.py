"""How much a task store keeps: tasks in total and per owner, the bytes of their outcomes, how long.

Every store enforces the same `TaskLimits` (the Redis one atomically, so replicas together keep them). A task
counts against its owner from its creation until it expires (running, or ended and within its TTL): the
authenticated caller that created it, else its session (session era), else the client's address (an anonymous
2026-07-28 caller; behind a proxy every such client shares the proxy's address). A store with no room refuses
the new task (`TasksFull`): it never drops a live one.
"""

from __future__ import annotations

from dataclasses import dataclass

from apimcp.protocol.errors import SERVER_BUSY, McpError

DEFAULT_MAX_TASKS = 10_000
DEFAULT_MAX_TASKS_PER_OWNER = 100
DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_TTL_SECONDS = 3600.0


@dataclass(frozen=True, slots=True)
class TaskLimits:
    max_tasks: int = DEFAULT_MAX_TASKS
    """Tasks the store keeps, for every endpoint and caller together."""
    max_tasks_per_owner: int = DEFAULT_MAX_TASKS_PER_OWNER
    """Tasks one owner keeps (see the module's docstring for who owns a task)."""
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    """The JSON of one task's outcome: a larger result fails the task, saying so."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """Records and outcomes of every task together (about: a record weighs its JSON)."""
    max_ttl_seconds: float = DEFAULT_MAX_TTL_SECONDS
    """The longest a task is kept after its last change, whatever a client asks for."""

    def __post_init__(self) -> None:
        if min(self.max_tasks, self.max_tasks_per_owner, self.max_result_bytes, self.max_bytes) <= 0:
            raise ValueError("task limits must be positive")
        if not self.max_ttl_seconds >= 1:
            raise ValueError("max_ttl_seconds must be at least 1")

    @property
    def max_ttl_ms(self) -> int:
        return round(self.max_ttl_seconds * 1000)


def owner_key(principal: str | None, session_id: str | None, client: str | None) -> str:
    """Whose allowance of `max_tasks_per_owner` a new task counts against."""
    if principal is not None:
        return "p:" + principal
    if session_id is not None:
        return "s:" + session_id
    return "a:" + (client or "unknown")


class TasksFull(McpError):
    """No room for another task (or for a task's result): `limit` names the bound that refused it."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(SERVER_BUSY, message, {"limit": limit})
        self.limit = limit


def owner_full(limits: TaskLimits) -> TasksFull:
    return TasksFull(
        "max_tasks_per_owner",
        f"You already have {limits.max_tasks_per_owner} tasks kept (max_tasks_per_owner); new ones are possible "
        "once some of them expire",
    )


def store_full(limit: str) -> TasksFull:
    what = "tasks" if limit == "max_tasks" else "task results"
    return TasksFull(limit, f"The task store holds as many {what} as it may ({limit}); try again later")
