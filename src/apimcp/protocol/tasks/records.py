"""A task as the store keeps it, and as each era's wire shows it.

A record is written by the replica running the task (status, input requests, outcome) and read by any
replica a client reaches. The outcome is kept as the JSON the client will read (the call's result shaped
for the revision that created the task, or the JSON-RPC error object), so a reader never re-shapes it.
What clients send back to a task waiting for input is kept beside the record, key by key, never in it, so
that a writer of one never overwrites the other.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from apimcp.protocol.jsonrpc import JsonObject

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"

LEASE_SECONDS = 15.0
"""A running task's record says it is alive for this long; its runner renews it well before."""


def new_task_id() -> str:
    return "task-" + secrets.token_urlsafe(18)


def iso(timestamp: float) -> str:
    """ISO 8601 in UTC with milliseconds, as tasks carry their times."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    task_id: str
    owner: str | None
    """The authenticated principal that created it; only the same caller reaches it."""
    session_id: str | None
    """The session that created it (session era): only that session reaches it."""
    scope: str = ""
    """The endpoint it belongs to: another endpoint sharing the store never reaches it."""
    quota: str = ""
    """Whose allowance of tasks and bytes it counts against (`caller.caller_key`: the caller, else the client's
    host); who may reach it is `owner`, `session_id` and `scope`."""
    status: TaskStatus
    created_at: float
    updated_at: float
    ttl_ms: int
    poll_interval_ms: int
    lease_until: float
    status_message: str | None = None
    input_requests: Mapping[str, JsonObject] = field(default_factory=dict)
    """Wire-form requests ({method, params}) the task waits on, by key."""
    result: bytes | None = None
    """The wire result (JSON) of a completed task."""
    error: bytes | None = None
    """The JSON-RPC error object (JSON) of a failed task."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float:
        """Kept for its TTL after its last change, or after its lease while it runs (renewing the lease keeps a
        running task), so a running task never expires under its client."""
        last = self.updated_at if self.terminal else max(self.updated_at, self.lease_until)
        return last + self.ttl_ms / 1000

    def moved(self, status: TaskStatus, **changes: Any) -> TaskRecord:
        now = time.time()
        return replace(self, status=status, updated_at=now, **changes)

    def failed(self, error: JsonObject) -> TaskRecord:
        """Ended as failed with this JSON-RPC error object; its message is the status message too, so that a
        2025-11-25 `tasks/get` (which shows no error) says why."""
        message = error.get("message")
        return self.moved(
            "failed",
            input_requests={},
            error=orjson.dumps(error),
            status_message=message if isinstance(message, str) else None,
        )

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "id": self.task_id,
                "owner": self.owner,
                "session": self.session_id,
                "scope": self.scope,
                "quota": self.quota,
                "status": self.status,
                "created": self.created_at,
                "updated": self.updated_at,
                "ttl": self.ttl_ms,
                "poll": self.poll_interval_ms,
                "lease": self.lease_until,
                "message": self.status_message,
                "inputs": self.input_requests,
                "result": orjson.Fragment(self.result) if self.result is not None else None,
                "error": orjson.Fragment(self.error) if self.error is not None else None,
            }
        )

    @classmethod
    def decode(cls, raw: bytes) -> TaskRecord:
        data = orjson.loads(raw)
        return cls(
            task_id=data["id"],
            owner=data["owner"],
            session_id=data["session"],
            scope=data["scope"],
            quota=data.get("quota", ""),
            status=data["status"],
            created_at=data["created"],
            updated_at=data["updated"],
            ttl_ms=data["ttl"],
            poll_interval_ms=data["poll"],
            lease_until=data["lease"],
            status_message=data["message"],
            input_requests=data["inputs"],
            result=orjson.dumps(data["result"]) if data["result"] is not None else None,
            error=orjson.dumps(data["error"]) if data["error"] is not None else None,
        )

    @property
    def weight(self) -> int:
        """Roughly the bytes it holds, for the memory store's `max_bytes`."""
        return 512 + len(self.result or b"") + len(self.error or b"") + len(orjson.dumps(self.input_requests))


@dataclass(frozen=True, slots=True)
class StoredTask:
    """A record and the input responses clients have sent it so far."""

    record: TaskRecord
    responses: Mapping[str, JsonObject]

    def pending(self) -> dict[str, JsonObject]:
        """The input requests still unanswered."""
        return {k: v for k, v in self.record.input_requests.items() if k not in self.responses}


def wire_task(stored: StoredTask, *, stateless: bool, detailed: bool) -> JsonObject:
    """A task as the wire shows it: 2026-07-28 (ttlMs, pollIntervalMs; `detailed` adds the input requests
    or the outcome, as tasks/get does) or 2025-11-25 (ttl, pollInterval; outcomes through tasks/result)."""
    record = stored.record
    status: str = record.status
    pending = stored.pending() if status == "input_required" else {}
    if status == "input_required" and not pending:
        status = "working"  # every request answered: the runner is about to go on
    out: JsonObject = {"taskId": record.task_id, "status": status}
    if record.status_message is not None:
        out["statusMessage"] = record.status_message
    out["createdAt"] = iso(record.created_at)
    out["lastUpdatedAt"] = iso(record.updated_at)
    if stateless:
        out["ttlMs"] = record.ttl_ms
        out["pollIntervalMs"] = record.poll_interval_ms
    else:
        out["ttl"] = record.ttl_ms
        out["pollInterval"] = record.poll_interval_ms
    if detailed:
        if pending:
            out["inputRequests"] = pending
        elif status == "completed" and record.result is not None:
            out["result"] = orjson.Fragment(record.result)
        elif status == "failed" and record.error is not None:
            out["error"] = orjson.Fragment(record.error)
    return out
