"""How much a task store keeps: tasks in total and per owner, the bytes of their outcomes, how long.

Every store enforces the same `TaskLimits` (the Redis one atomically, so replicas together keep them). A task
counts against its owner from its creation until it expires (running, or ended and within its TTL). The owner,
for these limits, is `apimcp.protocol.caller.caller_key`: the authenticated caller that created it, else the
host of the client's address (an IPv6 one by its /64), as rate limits count callers; never the session, which
any client may open as many of as it likes (behind a proxy every anonymous client shares the proxy's address).
Who may *reach* a task is another matter (`methods.find`). A store with no room refuses the new task
(`TasksFull`), and a result with no room fails its task: it never drops a live one.
"""

from __future__ import annotations

from dataclasses import dataclass

from apimcp.protocol.errors import SERVER_BUSY, McpError

DEFAULT_MAX_TASKS = 10_000
DEFAULT_MAX_TASKS_PER_OWNER = 100
DEFAULT_MAX_RESULT_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_BYTES_PER_OWNER = 32 * 1024 * 1024
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
    max_bytes_per_owner: int = DEFAULT_MAX_BYTES_PER_OWNER
    """Records and outcomes of one owner's tasks together, so that no owner takes all of `max_bytes`."""
    max_ttl_seconds: float = DEFAULT_MAX_TTL_SECONDS
    """The longest a task is kept after its last change, whatever a client asks for."""

    def __post_init__(self) -> None:
        bounds = (self.max_tasks, self.max_tasks_per_owner, self.max_result_bytes, self.max_bytes,
                  self.max_bytes_per_owner)  # fmt: skip
        if min(bounds) <= 0:
            raise ValueError("task limits must be positive")
        if self.max_bytes_per_owner > self.max_bytes:
            raise ValueError(
                f"max_bytes_per_owner ({self.max_bytes_per_owner}) must be at most max_bytes ({self.max_bytes})"
            )
        if not self.max_ttl_seconds >= 1:
            raise ValueError("max_ttl_seconds must be at least 1")

    @property
    def max_ttl_ms(self) -> int:
        return round(self.max_ttl_seconds * 1000)


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


def owner_bytes_full(limits: TaskLimits) -> TasksFull:
    return TasksFull(
        "max_bytes_per_owner",
        f"Your tasks would hold more than the {limits.max_bytes_per_owner} bytes one caller's tasks may hold together "
        "(max_bytes_per_owner); call the tool without a task, or once some of your tasks expire",
    )


def store_full(limit: str) -> TasksFull:
    what = "tasks" if limit == "max_tasks" else "task results"
    return TasksFull(limit, f"The task store holds as many {what} as it may ({limit}); try again later")
