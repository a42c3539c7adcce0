"""Session streams' events in Redis, so that a client resumes a dropped stream on any replica.

Each stream is a Redis stream of its events (entry id `0-n` for event n, at most `max_events`) beside a
hash naming its session, its kind and whether it has ended; both expire `retention_seconds` after the last
event and share a hash tag, so one script writes an event atomically, on a Redis Cluster too. A replica
following a POST's stream for a client that resumed waits with `XREAD BLOCK`, so the event written on the
replica running the request reaches it at once; a blocking read holds one of the client's pooled connections
while it waits, so at most `MAX_BLOCKING_READS` wait so, and the others read again after their wait (a client
resuming a stream a hundred times must not take the state store from everyone else). Its sessions' backlogs are in
`redis_backlog`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from redis.asyncio import Redis

from apimcp.protocol.event_store import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_RETENTION_SECONDS,
    EventStore,
    StreamInfo,
    StreamKind,
)
from apimcp.state.redis_backlog import RedisBacklog
from apimcp.state.redis_connection import RedisClient
from apimcp.state.redis_sessions import reached

MAX_BLOCKING_READS: Final = 16
"""Blocking reads waiting at once per store, a small share of the client's pool of connections."""

_APPEND = """
local events, info = KEYS[1], KEYS[2]
local n = redis.call('HINCRBY', info, 'n', 1)
if n == 1 then
  redis.call('HSET', info, 'session', ARGV[1], 'kind', ARGV[2])
  local after = tonumber(ARGV[7])
  if after > 0 then  -- a stream forgotten meanwhile: its numbering goes on
    n = after + 1
    redis.call('HSET', info, 'n', n)
  end
end
if ARGV[3] == '1' then redis.call('HSET', info, 'ended', '1') end
redis.call('XADD', events, 'MAXLEN', ARGV[5], '0-' .. n, 'd', ARGV[4])
redis.call('PEXPIRE', events, ARGV[6])
redis.call('PEXPIRE', info, ARGV[6])
return n
"""

_END = """
if redis.call('HEXISTS', KEYS[1], 'session') == 1 then redis.call('HSET', KEYS[1], 'ended', '1') end
"""
"""Only a stream still kept: a key written anew would have no expiry."""


class RedisEventStore(EventStore):
    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        if retention_seconds <= 0 or max_events <= 0:
            raise ValueError("event store limits must be positive")
        self._client = client
        self._prefix = prefix
        self.retention_seconds = retention_seconds
        self._max_events = max_events
        self._append = client.register_script(_APPEND)
        self._end = client.register_script(_END)
        self._blocking = asyncio.Semaphore(MAX_BLOCKING_READS)
        self.backlog = RedisBacklog(client, prefix)

    def _keys(self, stream: str) -> tuple[str, str]:
        tag = f"{self._prefix}ev:{{{stream}}}"
        return f"{tag}:e", f"{tag}:i"

    async def append(
        self, stream: str, session_id: str, kind: StreamKind, data: bytes, *, last: bool, after: int = 0
    ) -> int:
        retention = str(int(self.retention_seconds * 1000))
        args = [session_id, kind, "1" if last else "0", data, str(self._max_events), retention, str(after)]
        number = await self._append(keys=list(self._keys(stream)), args=args)
        return int(number)

    async def end(self, stream: str) -> None:
        await self._end(keys=[self._keys(stream)[1]])

    async def info(self, stream: str) -> StreamInfo | None:
        found: list[Any] = await reached(self._client.hmget(self._keys(stream)[1], ["session", "kind", "ended"]))
        session, kind, ended = found
        if not isinstance(session, bytes) or kind not in (b"get", b"post"):
            return None
        return StreamInfo(session.decode(), "get" if kind == b"get" else "post", ended is not None)

    async def after(self, stream: str, number: int, wait_seconds: float) -> list[tuple[int, bytes]]:
        events = self._keys(stream)[0]
        found: Any = await reached(self._client.xrange(events, min=f"(0-{number}", max="+"))
        if not found and wait_seconds > 0:
            if self._blocking.locked():  # as many wait on a connection as may: this one waits without one
                await asyncio.sleep(wait_seconds)
                found = await reached(self._client.xrange(events, min=f"(0-{number}", max="+"))
            else:
                async with self._blocking:
                    client: Redis = self._client  # type: ignore[assignment]  # XREAD of one key: any client will do
                    read: Any = await reached(client.xread({events: f"0-{number}"}, block=int(wait_seconds * 1000)))
                found = read[0][1] if read else []
        return [(int(entry_id.split(b"-")[1]), fields[b"d"]) for entry_id, fields in found]
