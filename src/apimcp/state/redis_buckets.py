"""Token buckets in Redis, so that a rate limit holds for every replica together.

One Lua script spends tokens atomically on the server's own clock (replicas' clocks never disagree
about a bucket): up to the count asked for, as many whole ones as the bucket holds, so a JSON-RPC batch
charged for its messages is one step that no other replica's request can come between. A bucket unused
for as long as it takes to fill up expires.
"""

from __future__ import annotations

from apimcp.ratelimit.buckets import BucketStore
from apimcp.state.redis_connection import RedisClient

_TAKE = """
local now = redis.call('TIME')
local t = tonumber(now[1]) + tonumber(now[2]) / 1000000
local rate, burst, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]) or burst, tonumber(state[2]) or t
tokens = math.min(burst, tokens + math.max(0, t - at) * rate)
local spent = math.min(count, math.floor(tokens))
tokens = tokens - spent
local wait = 0
if spent < count then wait = (1 - tokens) / rate end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(t))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {tostring(spent), tostring(wait)}
"""


class RedisBuckets(BucketStore):
    def __init__(self, client: RedisClient, prefix: str) -> None:
        self._prefix = f"{prefix}rl:"
        self._take = client.register_script(_TAKE)

    async def take_up_to(self, key: str, rate: float, burst: int, count: int) -> tuple[int, float]:
        spent, wait = await self._take(keys=[self._prefix + key], args=[repr(rate), burst, count])
        return int(spent), float(wait)
