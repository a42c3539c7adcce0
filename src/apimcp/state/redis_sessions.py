"""Session records in Redis, so that any replica serves any session-era request.

Each session is a hash (`rec`: the record as JSON, `ep`: its endpoint, `ow`: its caller's set) that expires
`idle_timeout` after the last request or touch; sorted sets (every session, the sessions of each endpoint, and
those of each caller on an endpoint, scored by when they were last seen) keep the limits of `SessionLimits`
exactly across replicas. Creating, reading (with the
refresh of its expiry) and deleting are one Lua script each: one round trip, atomic. All keys share one hash
tag, so a Redis Cluster keeps them in one slot (scripts may only touch one).

What stays in each process is what cannot be shared: open streams and requests waiting for a client's answer
(`protocol.legacy`); the records themselves are plain data.

A record read from Redis is kept in the process for `fresh_seconds` (at most one second, a tenth of the
idle timeout), so a session's requests in a burst cost one round trip, not one each: its expiry is
refreshed at that resolution, like the memory store's. A DELETE elsewhere reaches this copy through the
session relay at once; a change elsewhere (log level, subscriptions) within `fresh_seconds`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar

import orjson
from redis.exceptions import RedisError

from apimcp.protocol.sessions import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SESSIONS_PER_CALLER,
    DEFAULT_MAX_SESSIONS_PER_ENDPOINT,
    Session,
    SessionChange,
    SessionLimits,
    SessionsFull,
    SessionStore,
    StoreUnavailable,
)
from apimcp.protocol.versions import find_revision
from apimcp.state.redis_connection import RedisClient

T = TypeVar("T")
_MAX_COPIES = 10_000


async def reached(call: Awaitable[T]) -> T:
    """`call`'s answer; a Redis that cannot be reached is a StoreUnavailable (the endpoint answers 503)."""
    try:
        return await call
    except (RedisError, OSError) as exc:
        raise StoreUnavailable(f"the state store cannot be reached ({type(exc).__name__})") from exc


_CREATE = """
local all, mine, record, theirs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, endpoint, body = ARGV[1], ARGV[2], ARGV[3]
local now, idle = tonumber(ARGV[4]), tonumber(ARGV[5])
local most, most_here, most_theirs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', all, '-inf', now - idle)
redis.call('ZREMRANGEBYSCORE', mine, '-inf', now - idle)
redis.call('ZREMRANGEBYSCORE', theirs, '-inf', now - idle)
if redis.call('ZCARD', all) >= most then
  return {1, redis.call('ZRANGE', all, 0, 0, 'WITHSCORES')[2]}
end
if redis.call('ZCARD', mine) >= most_here then
  return {2, redis.call('ZRANGE', mine, 0, 0, 'WITHSCORES')[2]}
end
if redis.call('ZCARD', theirs) >= most_theirs then
  return {3, redis.call('ZRANGE', theirs, 0, 0, 'WITHSCORES')[2]}
end
redis.call('ZADD', all, now, id)
redis.call('ZADD', mine, now, id)
redis.call('ZADD', theirs, now, id)
redis.call('PEXPIRE', theirs, idle)
redis.call('HSET', record, 'rec', body, 'ep', endpoint, 'ow', theirs)
redis.call('PEXPIRE', record, idle)
return {0}
"""

_GET = """
local record, all, endpoints = KEYS[1], KEYS[2], ARGV[3]
local found = redis.call('HMGET', record, 'rec', 'ep', 'ow')
if not found[1] then
  redis.call('ZREM', all, ARGV[1])
  return false
end
local now, idle = tonumber(ARGV[2]), tonumber(ARGV[4])
redis.call('PEXPIRE', record, idle)
redis.call('ZADD', all, 'XX', now, ARGV[1])
redis.call('ZADD', endpoints .. found[2], 'XX', now, ARGV[1])
if found[3] then
  redis.call('ZADD', found[3], 'XX', now, ARGV[1])
  redis.call('PEXPIRE', found[3], idle)
end
return found[1]
"""

_DELETE = """
local record, all, endpoints = KEYS[1], KEYS[2], ARGV[2]
local found = redis.call('HMGET', record, 'ep', 'ow')
redis.call('ZREM', all, ARGV[1])
if not found[1] then
  return 0
end
redis.call('ZREM', endpoints .. found[1], ARGV[1])
if found[2] then
  redis.call('ZREM', found[2], ARGV[1])
end
return redis.call('DEL', record)
"""

_CHANGE = """
local raw = redis.call('HGET', KEYS[1], 'rec')
if not raw then
  return 0
end
local rec = cjson.decode(raw)
local field, value = ARGV[1], ARGV[2]
if field == 'log_level' then
  rec.log_level = value
elseif field == 'initialized' then
  rec.initialized = true
else
  local kept, seen = {}, false
  if type(rec.subscriptions) == 'table' then
    for _, uri in ipairs(rec.subscriptions) do
      if uri == value then
        seen = true
      end
      if uri ~= value or field == 'subscribe' then
        table.insert(kept, uri)
      end
    end
  end
  if field == 'subscribe' and not seen then
    table.insert(kept, value)
  end
  rec.subscriptions = kept
end
redis.call('HSET', KEYS[1], 'rec', cjson.encode(rec))
return 1
"""
"""One field of a record changed where it is kept, so that what another replica changed meanwhile stays (an
empty list of subscriptions is written `{}` by Lua's JSON: `decode` reads it as none)."""


def encode(session: Session) -> bytes:
    return orjson.dumps(
        {
            "id": session.id,
            "endpoint": session.endpoint,
            "revision": session.revision.version,
            "capabilities": session.capabilities_json.decode(),
            "client_info": session.client_info_json.decode() if session.client_info_json is not None else None,
            "log_level": session.log_level,
            "subscriptions": sorted(session.subscriptions),
            "initialized": session.initialized,
            "principal": session.principal,
            "created": session.created_at,
        }
    )


def decode(raw: bytes) -> Session | None:
    """The record, or None when it names a revision this process does not know (an older or newer replica)."""
    data: dict[str, Any] = orjson.loads(raw)
    revision = find_revision(data["revision"])
    if revision is None:
        return None
    info = data.get("client_info")
    return Session(
        id=data["id"],
        endpoint=data["endpoint"],
        revision=revision,
        capabilities_json=data["capabilities"].encode(),
        client_info_json=info.encode() if isinstance(info, str) else None,
        log_level=data.get("log_level"),
        subscriptions=set(data.get("subscriptions") or ()),
        initialized=bool(data.get("initialized")),
        principal=data.get("principal"),
        created_at=data.get("created", 0.0),
    )


_FULL: dict[int, Literal["server", "endpoint", "caller"]] = {1: "server", 2: "endpoint", 3: "caller"}


class RedisSessionStore(SessionStore):
    def __init__(
        self,
        client: RedisClient,
        prefix: str = "apimcp:",
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_sessions_per_endpoint: int = DEFAULT_MAX_SESSIONS_PER_ENDPOINT,
        max_sessions_per_caller: int = DEFAULT_MAX_SESSIONS_PER_CALLER,
    ) -> None:
        if idle_timeout <= 0 or max_sessions <= 0 or max_sessions_per_endpoint <= 0 or max_sessions_per_caller <= 0:
            raise ValueError("session limits must be positive")
        self.idle_timeout = idle_timeout
        self._client = client
        tag = f"{prefix}{{sessions}}:"  # one hash tag: a cluster keeps every session key in one slot
        self._all = tag + "all"
        self._endpoints = tag + "ep:"
        self._records = tag + "rec:"
        self._callers = tag + "caller:"
        self._max = max_sessions
        self._max_here = max_sessions_per_endpoint
        self._max_theirs = max_sessions_per_caller
        self._fresh = min(1.0, idle_timeout / 10)
        self._copies: OrderedDict[str, tuple[Session, float]] = OrderedDict()
        self._fetching: dict[str, asyncio.Future[Session | None]] = {}
        self._create = client.register_script(_CREATE)
        self._get = client.register_script(_GET)
        self._delete = client.register_script(_DELETE)
        self._change = client.register_script(_CHANGE)

    @classmethod
    def with_limits(cls, client: RedisClient, prefix: str, limits: SessionLimits) -> RedisSessionStore:
        return cls(client, prefix, limits.idle_timeout, max_sessions=limits.max_sessions,
                   max_sessions_per_endpoint=limits.max_sessions_per_endpoint,
                   max_sessions_per_caller=limits.max_sessions_per_caller)  # fmt: skip

    @property
    def _idle_ms(self) -> int:
        return max(1, int(self.idle_timeout * 1000))

    async def create(self, session: Session) -> None:
        now = int(time.time() * 1000)
        caller = hashlib.sha256(f"{session.endpoint}\n{session.caller}".encode()).hexdigest()[:32]
        keys = [self._all, self._endpoints + session.endpoint, self._records + session.id, self._callers + caller]
        args: list[bytes | str | int] = [session.id, session.endpoint, encode(session), now, self._idle_ms, self._max,
                                         self._max_here, self._max_theirs]  # fmt: skip
        answer = await reached(self._create(keys=keys, args=args))
        if int(answer[0]) != 0:
            oldest = float(answer[1])
            retry = max(1, int((oldest + self._idle_ms - now) / 1000) + 1)
            raise SessionsFull(_FULL[int(answer[0])], retry)

    async def get(self, session_id: str) -> Session | None:
        now = time.monotonic()
        copy = self._copies.get(session_id)
        if copy is not None and now - copy[1] < self._fresh:
            return copy[0]
        fetching = self._fetching.get(session_id)
        if fetching is None:  # a burst of one session's requests waits for one round trip, not one each
            fetching = self._fetching[session_id] = asyncio.ensure_future(self._fetch(session_id, now))
            fetching.add_done_callback(lambda _: self._fetching.pop(session_id, None))
        return await asyncio.shield(fetching)

    async def _fetch(self, session_id: str, now: float) -> Session | None:
        raw = await reached(
            self._get(
                keys=[self._records + session_id, self._all],
                args=[session_id, int(time.time() * 1000), self._endpoints, self._idle_ms],
            )
        )
        session = decode(raw) if raw else None
        if session is None:
            self._copies.pop(session_id, None)
        else:
            self._keep(session, now)
        return session

    def _keep(self, session: Session, now: float) -> None:
        self._copies[session.id] = (session, now)
        self._copies.move_to_end(session.id)
        while len(self._copies) > _MAX_COPIES:
            self._copies.popitem(last=False)

    def forget_copy(self, session_id: str) -> None:
        self._copies.pop(session_id, None)

    async def touch(self, session_id: str) -> bool:
        return await self.get(session_id) is not None

    async def change(self, session: Session, change: SessionChange) -> None:
        await reached(self._change(keys=[self._records + session.id], args=[change.field, change.value]))
        change.apply(session)
        if session.id in self._copies:
            self._keep(session, self._copies[session.id][1])

    async def delete(self, session_id: str) -> bool:
        self._copies.pop(session_id, None)
        deleted = await reached(
            self._delete(keys=[self._records + session_id, self._all], args=[session_id, self._endpoints])
        )
        return bool(deleted)
