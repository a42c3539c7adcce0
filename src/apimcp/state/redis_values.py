"""Users' credentials and pending elicitations in Redis, so that a value supplied through one replica's pages
serves calls on every replica.

Values are sealed before they leave the process (`state.sealed`, with the state key every replica shares) and
expire with their TTL; pending elicitations are taken with GETDEL, so a link works once whichever replica its
page reaches, and are bounded as in memory: an owner keeps `max_per_owner`, the store `max_pending` (of which
sessions nobody authenticated hold a tenth, in a set of their own), the oldest letting go for a new one (sorted
sets scored by expiry, one script). A record is written again only while it is there, so a link taken meanwhile
stays taken. Keys carry hash tags per kind, so a Redis Cluster keeps each script's keys in one slot.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

import orjson

from apimcp.state.owners import is_anonymous
from apimcp.state.pending import (
    DEFAULT_MAX_PENDING,
    DEFAULT_MAX_PER_OWNER,
    DEFAULT_TTL_SECONDS,
    Pending,
    PendingStore,
    new_id,
    tier_places,
)
from apimcp.state.redis_connection import RedisClient
from apimcp.state.sealed import ValueSealer
from apimcp.state.user_values import DEFAULT_TTL_SECONDS as VALUE_TTL_SECONDS
from apimcp.state.user_values import UserValueStore, value_place

_DROP = """
local function drop(id)
  local body = redis.call('GETDEL', ARGV[1] .. id)
  redis.call('ZREM', ARGV[4], id)
  if body then
    local pending = cjson.decode(body)
    if pending['state'] and pending['state'] ~= cjson.null then
      redis.call('DEL', ARGV[2] .. pending['state'])
    end
    redis.call('ZREM', ARGV[3] .. pending['owner'], id)
  end
  return body
end
"""
"""A pending link gone with its state's key and its places in the sets; ARGV[1..4]: the prefixes of ids, states and
owners' sets, and the set of every pending one."""

_OPEN = (
    _DROP
    + """
local now, mine, id = tonumber(ARGV[5]), ARGV[3] .. ARGV[7], ARGV[8]
redis.call('ZREMRANGEBYSCORE', ARGV[4], '-inf', now)
redis.call('ZREMRANGEBYSCORE', mine, '-inf', now)
while redis.call('ZCARD', mine) >= tonumber(ARGV[6]) do
  drop(redis.call('ZRANGE', mine, 0, 0)[1])
end
while redis.call('ZCARD', ARGV[4]) >= tonumber(ARGV[9]) do
  drop(redis.call('ZRANGE', ARGV[4], 0, 0)[1])
end
local expiry = tonumber(ARGV[10])
redis.call('SET', ARGV[1] .. id, ARGV[11], 'PX', math.max(1, math.floor((expiry - now) / 1000)))
redis.call('ZADD', mine, expiry, id)
redis.call('PEXPIREAT', mine, math.floor(expiry / 1000) + 1)
redis.call('ZADD', ARGV[4], expiry, id)
return 1
"""
)
"""ARGV[5] now (µs), ARGV[6] max per owner, ARGV[7] the owner, ARGV[8] the new id, ARGV[9] max in all,
ARGV[10] its expiry (µs: links opened in one millisecond still let go oldest first), ARGV[11] its record."""

_TAKE = (
    _DROP
    + """
local body = drop(ARGV[5])
if body then
  redis.call('DEL', ARGV[6])
end
return body
"""
)
"""ARGV[5] the id taken (KEYS[1] its key), ARGV[6] its owner's `asked` key."""


class RedisUserValueStore(UserValueStore):
    def __init__(self, client: RedisClient, sealer: ValueSealer, prefix: str = "apimcp:",
                 ttl_seconds: float = VALUE_TTL_SECONDS) -> None:  # fmt: skip
        self._client = client
        self._sealer = sealer
        self._prefix = f"{prefix}{{users}}:"
        self._ttl = ttl_seconds

    def _key(self, owner: str, key: str) -> str:
        return f"{self._prefix}{owner}\x00{key}"

    async def get(self, owner: str, key: str) -> dict[str, Any] | None:
        sealed = await self._client.get(self._key(owner, key))
        if not isinstance(sealed, bytes):  # the client never decodes responses: bytes, or None when absent
            return None
        plain = self._sealer.open(value_place(owner, key), sealed)
        return orjson.loads(plain) if plain is not None else None

    async def put(self, owner: str, key: str, value: dict[str, Any], ttl_seconds: float | None = None) -> None:
        sealed = self._sealer.seal(value_place(owner, key), orjson.dumps(value))
        await self._client.set(self._key(owner, key), sealed, px=max(1, int((ttl_seconds or self._ttl) * 1000)))

    async def delete(self, owner: str, key: str) -> None:
        await self._client.delete(self._key(owner, key))


class RedisPendingStore(PendingStore):
    def __init__(
        self,
        client: RedisClient,
        prefix: str = "apimcp:",
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self._client = client
        tag = f"{prefix}{{pending}}:"
        self._ids, self._states, self._asked = tag + "id:", tag + "state:", tag + "asked:"
        self._owners, self._every, self._every_anonymous = tag + "owner:", tag + "every", tag + "every-anonymous"
        self._max, self._max_per_owner = max_pending, max_per_owner
        self._open = client.register_script(_OPEN)
        self._take = client.register_script(_TAKE)

    def _every_of(self, owner: str) -> str:
        """The set of every link of `owner`'s tier (`is_anonymous`)."""
        return self._every_anonymous if is_anonymous(owner) else self._every

    def _prefixes(self, owner: str) -> list[str | int | bytes]:
        """The scripts' ARGV[1..4] for `owner`'s links."""
        return [self._ids, self._states, self._owners, self._every_of(owner)]

    def _asked_key(self, owner: str, key: str, exposition: str) -> str:
        return f"{self._asked}{owner}\x00{key}\x00{exposition}"

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl_seconds * 1000))

    async def open(self, owner: str, key: str, exposition: str, session_id: str | None) -> Pending:
        asked = self._asked_key(owner, key, exposition)
        waiting_id = await self._client.get(asked)
        if waiting_id is not None:
            waiting = await self.get(_text(waiting_id))
            if waiting is not None and waiting.state is None:
                if waiting.session_id == session_id:
                    return waiting
                moved = replace(waiting, session_id=session_id)  # asked again from another session: tell that one
                if await self._write(moved):
                    return moved
        pending = Pending(new_id(), owner, key, exposition, session_id, time.time() + self.ttl_seconds)
        now = int(time.time() * 1_000_000)
        expiry = int(pending.expires_at * 1_000_000)
        prefixes, most = self._prefixes(owner), tier_places(self._max, owner)
        args = [*prefixes, now, self._max_per_owner, owner, pending.id, most, expiry, orjson.dumps(asdict(pending))]
        await self._open(keys=[self._owners + owner, self._every_of(owner), self._ids + pending.id], args=args)
        await self._client.set(asked, pending.id, px=self._ttl_ms)
        return pending

    async def _write(self, pending: Pending) -> bool:
        """Write `pending` again if it is still there (False: taken or expired meanwhile, and left so)."""
        remaining = max(1, int((pending.expires_at - time.time()) * 1000))
        if not await self._client.set(self._ids + pending.id, orjson.dumps(asdict(pending)), px=remaining, xx=True):
            return False
        if pending.state is not None:
            await self._client.set(self._states + pending.state, pending.id, px=remaining)
        return True

    async def get(self, pending_id: str) -> Pending | None:
        body = await self._client.get(self._ids + pending_id)
        return Pending(**orjson.loads(body)) if body is not None else None

    async def update(self, pending: Pending) -> None:
        previous = await self.get(pending.id)
        if previous is None:
            return
        await self._write(pending)
        if previous.state is not None and previous.state != pending.state:  # a connection started again
            await self._client.delete(self._states + previous.state)

    async def take(self, pending_id: str) -> Pending | None:
        current = await self.get(pending_id)
        asked = self._asked_key(current.owner, current.key, current.exposition) if current is not None else ""
        prefixes = self._prefixes(current.owner if current is not None else "")
        body = await self._take(keys=[self._ids + pending_id], args=[*prefixes, pending_id, asked])
        return Pending(**orjson.loads(body)) if body is not None else None

    async def by_state(self, state: str) -> Pending | None:
        pending_id = await self._client.get(self._states + state)
        return await self.get(_text(pending_id)) if pending_id is not None else None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
