"""Tasks in Redis, so that any replica answers `tasks/get`, takes input responses and cancels.

One hash per task: field `r` holds the record (JSON), fields `in:<key>` the input responses clients sent.
Both writers stay apart: the runner replaces `r`, a `tasks/update` adds `in:` fields (the first answer to a
key stays). A script refuses to replace the record of a task that has ended, so a cancellation and the
call's outcome never overwrite each other. The hash expires its TTL after the last change of the record.
A sorted set per session lists its tasks (2025-11-25 `tasks/list`). Replicas watch a task by reading it
again every quarter of a second, which bounds how soon a cancellation or an answer made elsewhere arrives.
A Redis that cannot be reached is a `StoreUnavailable` (the endpoint answers 503 with Retry-After).

The `TaskLimits` hold across replicas: creating and updating a task are one script each, which first forgets
the tasks that expired, then counts. Two sorted sets score every task and each owner's tasks by when they
expire (so the count of live ones is exact even before a forgotten task's hash is gone), a hash keeps each
task's weight (its record's bytes) and a counter their sum; another hash keeps each task's owner and a third the
sum of each owner's weights (`max_bytes_per_owner`), both forgotten with the task. Every key shares one hash tag,
so a Redis Cluster keeps them in one slot (a script may only touch one).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from typing import Any

import orjson

from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.tasks.limits import TaskLimits, owner_bytes_full, owner_full, store_full
from apimcp.protocol.tasks.records import StoredTask, TaskRecord
from apimcp.protocol.tasks.store import TaskStore
from apimcp.state.redis_connection import RedisClient
from apimcp.state.redis_sessions import reached

POLL_SECONDS = 0.25
_RESPONSE = b"in:"

# KEYS[2] every task by expiry, KEYS[3] weights, KEYS[4] their sum, KEYS[7] each owner's sum (by the owner's
# key), KEYS[8] each task's owner (that key); ARGV[1] now (ms).
_FORGET_EXPIRED = """
local now = tonumber(ARGV[1])
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, id in ipairs(gone) do
  local weight = redis.call('HGET', KEYS[3], id)
  if weight then
    redis.call('DECRBY', KEYS[4], weight)
    redis.call('HDEL', KEYS[3], id)
    local owner = redis.call('HGET', KEYS[8], id)
    if owner then
      if redis.call('HINCRBY', KEYS[7], owner, -tonumber(weight)) <= 0 then redis.call('HDEL', KEYS[7], owner) end
      redis.call('HDEL', KEYS[8], id)
    end
  end
end
if #gone > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
"""

# KEYS[1] the task's hash, KEYS[5] the owner's tasks by expiry; ARGV[2] id, ARGV[3] record, ARGV[4] its expiry
# (ms), ARGV[5] its weight. Writes the record and its place in the indexes; `growth`: what it adds to the sum.
_KEEP = """
local expiry, weight = tonumber(ARGV[4]), tonumber(ARGV[5])
local function keep(growth)
  redis.call('HSET', KEYS[1], 'r', ARGV[3])
  redis.call('PEXPIREAT', KEYS[1], expiry)
  redis.call('ZADD', KEYS[2], expiry, ARGV[2])
  redis.call('ZADD', KEYS[5], expiry, ARGV[2])
  redis.call('PEXPIREAT', KEYS[5], expiry, 'GT')
  redis.call('PEXPIREAT', KEYS[5], expiry, 'NX')
  redis.call('HSET', KEYS[3], ARGV[2], weight)
  redis.call('INCRBY', KEYS[4], growth)
  redis.call('HSET', KEYS[8], ARGV[2], KEYS[5])
  redis.call('HINCRBY', KEYS[7], KEYS[5], growth)
end
local function owner_holds()
  return tonumber(redis.call('HGET', KEYS[7], KEYS[5]) or '0')
end
"""

# KEYS[6] the session's tasks (or ''); ARGV[6..8] max tasks, per owner, bytes; ARGV[9] created (its score there);
# ARGV[10] max bytes per owner.
_CREATE = (
    _FORGET_EXPIRED
    + _KEEP
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
if redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[7]) then return -1 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return -2 end
if tonumber(redis.call('GET', KEYS[4]) or '0') + weight > tonumber(ARGV[8]) then return -3 end
if owner_holds() + weight > tonumber(ARGV[10]) then return -4 end
keep(weight)
if KEYS[6] ~= '' then
  redis.call('ZADD', KEYS[6], ARGV[9], ARGV[2])
  redis.call('PEXPIREAT', KEYS[6], expiry, 'GT')
  redis.call('PEXPIREAT', KEYS[6], expiry, 'NX')
  local listed, most = redis.call('ZCARD', KEYS[6]), tonumber(ARGV[7])
  if listed > 2 * most then  -- the session's list forgets, oldest first, tasks whose hash has expired
    local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[2])
    for _, id in ipairs(redis.call('ZRANGE', KEYS[6], 0, math.min(listed - most, 100) - 1)) do
      if redis.call('EXISTS', prefix .. id) == 0 then
        redis.call('ZREM', KEYS[6], id)
      end
    end
  end
end
return 1
"""
)

# ARGV[6] whether the record brings a result (only then may the byte bounds refuse it), ARGV[7] max bytes,
# ARGV[8] max bytes per owner.
_UPDATE = (
    _FORGET_EXPIRED
    + _KEEP
    + """
local current = redis.call('HGET', KEYS[1], 'r')
if not current then return 0 end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
local growth = weight - tonumber(redis.call('HGET', KEYS[3], ARGV[2]) or '0')
if ARGV[6] == '1' and growth > 0 then
  if tonumber(redis.call('GET', KEYS[4]) or '0') + growth > tonumber(ARGV[7]) then return -3 end
  if owner_holds() + growth > tonumber(ARGV[8]) then return -4 end
end
keep(growth)
if KEYS[6] ~= '' then redis.call('PEXPIREAT', KEYS[6], expiry, 'GT') end
return 1
"""
)

_RESPOND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[1], 'in:' .. ARGV[i], ARGV[i + 1]) end
return 1
"""


def _args(record: TaskRecord, *rest: str | int | float) -> list[bytes | str | int | float]:
    """What both scripts take first: now, the id, the record, when it expires (ms), its weight; then `rest`."""
    encoded = record.encode()
    return [int(time.time() * 1000), record.task_id, encoded, math.ceil(record.expires_at * 1000), len(encoded), *rest]


def _refused(answer: int, limits: TaskLimits) -> Exception:
    if answer == -1:
        return owner_full(limits)
    if answer == -4:
        return owner_bytes_full(limits)
    return store_full("max_tasks" if answer == -2 else "max_bytes")


class RedisTaskStore(TaskStore):
    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        poll_seconds: float = POLL_SECONDS,
        *,
        limits: TaskLimits | None = None,
    ) -> None:
        self._client = client
        self.limits = limits or TaskLimits()
        self._poll = poll_seconds
        self._tag = f"{prefix}{{tasks}}:"  # one hash tag: a cluster keeps every task key in one slot
        self._all, self._weights, self._bytes = self._tag + "all", self._tag + "weights", self._tag + "bytes"
        self._owner_bytes, self._owners = self._tag + "owner-bytes", self._tag + "owners"
        self._create = client.register_script(_CREATE)
        self._update = client.register_script(_UPDATE)
        self._respond = client.register_script(_RESPOND)

    def _key(self, task_id: str) -> str:
        return f"{self._tag}t:{task_id}"

    def _session_key(self, session_id: str) -> str:
        return f"{self._tag}s:{session_id}"

    def _keys(self, record: TaskRecord) -> list[str]:
        session = self._session_key(record.session_id) if record.session_id is not None else ""
        owner = f"{self._tag}o:{record.quota}"
        return [self._key(record.task_id), self._all, self._weights, self._bytes, owner, session,
                self._owner_bytes, self._owners]  # fmt: skip

    async def create(self, record: TaskRecord) -> bool:
        limits = self.limits
        bounds = (limits.max_tasks, limits.max_tasks_per_owner, limits.max_bytes, record.created_at,
                  limits.max_bytes_per_owner)  # fmt: skip
        answer = int(await reached(self._create(keys=self._keys(record), args=_args(record, *bounds))))
        if answer < 0:
            raise _refused(answer, limits)
        return answer == 1  # 0: an id taken already, never replace someone else's task

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
        brings_result = "1" if record.result is not None else "0"
        args = _args(record, brings_result, self.limits.max_bytes, self.limits.max_bytes_per_owner)
        answer = int(await reached(self._update(keys=self._keys(record), args=args)))
        if answer < 0:
            raise _refused(answer, self.limits)
        return answer == 1

    async def respond(self, task_id: str, responses: Mapping[str, JsonObject]) -> None:
        if not responses:
            return
        args: list[str | bytes] = []
        for key, value in responses.items():
            args += [key, orjson.dumps(value)]
        await reached(self._respond(keys=[self._key(task_id)], args=args))

    async def of_session(self, session_id: str) -> list[TaskRecord]:
        ids: Any = await reached(self._client.zrevrange(self._session_key(session_id), 0, 999))
        if not ids:
            return []
        reading = self._client.pipeline(transaction=False)  # one round trip for the records, not one each
        for task_id in ids:
            reading.hget(self._key(task_id.decode()), "r")
        found: list[Any] = await reached(reading.execute())
        return [TaskRecord.decode(raw) for raw in found if raw is not None]

    async def changed(self, task_id: str, wait_seconds: float) -> None:
        await asyncio.sleep(min(wait_seconds, self._poll))
