"""Sessions' backlogs in Redis (`apimcp.protocol.backlog`): what a GET stream missed, whichever replica opens it.

Per session, a hash (`heard`, the open stream's `holder` and lease `until`) and a list of parked notifications
share a hash tag, so that taking them when a stream opens and parking one are each one script, atomic on a
Redis Cluster too: a notification is either parked before the stream opened (and taken by it) or refused after
(and sent to the stream). Both expire `keep_seconds` after their last use. Per endpoint, a sorted set scores each
change by when it last happened, trimmed to the newest `max_marks` (the newest score trimmed is kept beside it);
these are a few keys per exposition and never expire. Times are milliseconds of the replicas' clocks.
"""

from __future__ import annotations

import time
from typing import Any

from apimcp.protocol.backlog import DEFAULT_MAX_MARKS, Backlog, Claimed, Marks
from apimcp.state.redis_connection import RedisClient

_MARK = """
redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2])
local extra = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if extra > 0 then
  local trimmed = redis.call('ZRANGE', KEYS[1], 0, extra - 1, 'WITHSCORES')
  local newest = tonumber(trimmed[#trimmed])
  if newest > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], newest) end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, extra - 1)
end
return 1
"""

_MARKS_SINCE = """
return {redis.call('ZRANGE', KEYS[1], '(' .. ARGV[1], '+inf', 'BYSCORE'), redis.call('GET', KEYS[2]) or '0'}
"""

_CLAIM = """
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'until', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local parked = redis.call('LRANGE', KEYS[2], 0, -1)
redis.call('DEL', KEYS[2])
return {redis.call('HGET', KEYS[1], 'heard') or '', parked}
"""

_RENEW = """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then redis.call('HSET', KEYS[1], 'until', ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

_RELEASE = """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then redis.call('HDEL', KEYS[1], 'holder', 'until') end
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', KEYS[1], 'heard') or '0') then
  redis.call('HSET', KEYS[1], 'heard', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

_PARK = """
if tonumber(redis.call('HGET', KEYS[1], 'until') or '0') > tonumber(ARGV[2]) then return 0 end
if not redis.call('LPOS', KEYS[2], ARGV[1]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
end
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"""


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


class RedisBacklog(Backlog):
    def __init__(self, client: RedisClient, prefix: str, *, max_marks: int = DEFAULT_MAX_MARKS) -> None:
        if max_marks <= 0:
            raise ValueError("backlog limits must be positive")
        self._client = client
        self._prefix = prefix
        self._max_marks = max_marks
        self._mark = client.register_script(_MARK)
        self._marks_since = client.register_script(_MARKS_SINCE)
        self._claim = client.register_script(_CLAIM)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._park = client.register_script(_PARK)

    def _session(self, session_id: str) -> list[str]:
        tag = f"{self._prefix}bl:{{{session_id}}}"
        return [f"{tag}:s", f"{tag}:p"]

    def _endpoint(self, endpoint: str) -> list[str]:
        tag = f"{self._prefix}bl-marks:{{{endpoint}}}"
        return [f"{tag}:m", f"{tag}:forgotten"]

    async def mark(self, endpoint: str, change: str) -> None:
        await self._mark(keys=self._endpoint(endpoint), args=[_ms(time.time()), change, self._max_marks])

    async def marks_since(self, endpoint: str, since: float) -> Marks:
        found: Any = await self._marks_since(keys=self._endpoint(endpoint), args=[int(since * 1000)])
        changed, forgotten = found
        return Marks(frozenset(c.decode() for c in changed), int(forgotten) > since * 1000)

    async def claim(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> Claimed:
        until = _ms(time.time() + lease_seconds)
        found: Any = await self._claim(keys=self._session(session_id), args=[holder, until, _ms(keep_seconds)])
        heard, parked = found
        return Claimed(int(heard) / 1000 if heard else None, list(parked))

    async def renew(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> None:
        until = _ms(time.time() + lease_seconds)
        await self._renew(keys=self._session(session_id), args=[holder, until, _ms(keep_seconds)])

    async def release(self, session_id: str, holder: str, keep_seconds: float) -> None:
        await self._release(keys=self._session(session_id), args=[holder, _ms(time.time()), _ms(keep_seconds)])

    async def park(self, session_id: str, message: bytes, keep_seconds: float, most: int) -> bool:
        args: list[bytes | int] = [message, _ms(time.time()), _ms(keep_seconds), most]
        return bool(await self._park(keys=self._session(session_id), args=args))

    async def forget(self, session_id: str) -> None:
        await self._client.delete(*self._session(session_id))
