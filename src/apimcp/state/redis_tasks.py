"""Tasks in Redis, so that any replica answers `tasks/get`, takes input responses and cancels.

One hash per task: field `r` holds the record (JSON), fields `in:<key>` the input responses clients sent.
Both writers stay apart: the runner replaces `r`, a `tasks/update` adds `in:` fields (the first answer to a
key stays). A script refuses to replace the record of a task that has ended, so a cancellation and the
call's outcome never overwrite each other. The hash expires its TTL after the last change of the record.
A sorted set per session lists its tasks (2025-11-25 `tasks/list`). Replicas watch a task by reading it
again every quarter of a second, which bounds how soon a cancellation or an answer made elsewhere arrives.
A Redis that cannot be reached is a `StoreUnavailable` (the endpoint answers 503 with Retry-After). What
bounds the tasks kept is what runs (`max_running` per process) and their TTL; Redis's `maxmemory` is the
operator's bound on the rest.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from typing import Any

import orjson

from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.tasks.records import StoredTask, TaskRecord
from apimcp.protocol.tasks.store import TaskStore
from apimcp.state.redis_connection import RedisClient
from apimcp.state.redis_sessions import reached

POLL_SECONDS = 0.25
_RESPONSE = b"in:"

_UPDATE = """
local current = redis.call('HGET', KEYS[1], 'r')
if not current then return 0 end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

_CREATE = """
if redis.call('HSETNX', KEYS[1], 'r', ARGV[1]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""

_RESPOND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], 'in:' .. ARGV[i], ARGV[i + 1]) end
return 1
"""


def _ttl_ms(record: TaskRecord) -> int:
    return max(1, math.ceil((record.expires_at - time.time()) * 1000))


class RedisTaskStore(TaskStore):
    def __init__(self, client: RedisClient, prefix: str, poll_seconds: float = POLL_SECONDS) -> None:
        self._client = client
        self._prefix = prefix
        self._poll = poll_seconds
        self._create = client.register_script(_CREATE)
        self._update = client.register_script(_UPDATE)
        self._respond = client.register_script(_RESPOND)

    def _key(self, task_id: str) -> str:
        return f"{self._prefix}task:{task_id}"

    def _session_key(self, session_id: str) -> str:
        return f"{self._prefix}task-s:{session_id}"

    async def create(self, record: TaskRecord) -> bool:
        key = self._key(record.task_id)
        ttl = _ttl_ms(record)
        if not await reached(self._create(keys=[key], args=[record.encode(), ttl])):
            return False  # an id taken already: never replace someone else's task
        if record.session_id is not None:
            index = self._session_key(record.session_id)
            await reached(self._client.zadd(index, {record.task_id: record.created_at}))
            # never shortened by a task that expires sooner than the others (NX: a new index; GT: a longer task)
            await reached(self._client.pexpire(index, ttl, nx=True))
            await reached(self._client.pexpire(index, ttl, gt=True))
        return True

    async def get(self, task_id: str) -> StoredTask | None:
        fields: Any = await reached(self._client.hgetall(self._key(task_id)))
        raw = fields.get(b"r")
        if raw is None:
            return None
        responses: dict[str, JsonObject] = {
            name[len(_RESPONSE) :].decode(): orjson.loads(value)
            for name, value in fields.items()
            if name.startswith(_RESPONSE)
        }
        return StoredTask(TaskRecord.decode(raw), responses)

    async def update(self, record: TaskRecord) -> bool:
        done = await reached(self._update(keys=[self._key(record.task_id)], args=[record.encode(), _ttl_ms(record)]))
        return bool(done)

    async def respond(self, task_id: str, responses: Mapping[str, JsonObject]) -> None:
        if not responses:
            return
        args: list[str | bytes] = []
        for key, value in responses.items():
            args += [key, orjson.dumps(value)]
        await reached(self._respond(keys=[self._key(task_id)], args=args))

    async def of_session(self, session_id: str) -> list[TaskRecord]:
        ids: Any = await reached(self._client.zrevrange(self._session_key(session_id), 0, 999))
        records: list[TaskRecord] = []
        for task_id in ids:
            raw: Any = await reached(self._client.hget(self._key(task_id.decode()), "r"))
            if raw is not None:
                records.append(TaskRecord.decode(raw))
        return records

    async def changed(self, task_id: str, wait_seconds: float) -> None:
        await asyncio.sleep(min(wait_seconds, self._poll))
