"""Users' credentials and pending elicitations in Redis, so that a value supplied through one replica's pages
serves calls on every replica.

Values are sealed before they leave the process (`state.sealed`, with the state key every replica shares) and
expire with their TTL; pending elicitations are taken with GETDEL, so a link works once whichever replica its
page reaches. Keys carry hash tags per kind, so a Redis Cluster keeps each script's keys in one slot.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

import orjson

from apimcp.state.pending import DEFAULT_TTL_SECONDS, Pending, PendingStore, new_id
from apimcp.state.redis_connection import RedisClient
from apimcp.state.sealed import ValueSealer
from apimcp.state.user_values import DEFAULT_TTL_SECONDS as VALUE_TTL_SECONDS
from apimcp.state.user_values import UserValueStore, value_place

_TAKE = """
local body = redis.call('GETDEL', KEYS[1])
if body then
  local state = cjson.decode(body)['state']
  if state and state ~= cjson.null then
    redis.call('DEL', ARGV[1] .. state)
  end
  redis.call('DEL', ARGV[2])
end
return body
"""


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
    def __init__(self, client: RedisClient, prefix: str = "apimcp:", ttl_seconds: float = DEFAULT_TTL_SECONDS) -> None:
        self.ttl_seconds = ttl_seconds
        self._client = client
        tag = f"{prefix}{{pending}}:"
        self._ids, self._states, self._asked = tag + "id:", tag + "state:", tag + "asked:"
        self._take = client.register_script(_TAKE)

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
                if waiting.session_id != session_id:  # asked again from another session: tell that one
                    waiting = replace(waiting, session_id=session_id)
                    await self._write(waiting)
                return waiting
        pending = Pending(new_id(), owner, key, exposition, session_id, time.time() + self.ttl_seconds)
        await self._write(pending)
        await self._client.set(asked, pending.id, px=self._ttl_ms)
        return pending

    async def _write(self, pending: Pending) -> None:
        remaining = max(1, int((pending.expires_at - time.time()) * 1000))
        await self._client.set(self._ids + pending.id, orjson.dumps(asdict(pending)), px=remaining)
        if pending.state is not None:
            await self._client.set(self._states + pending.state, pending.id, px=remaining)

    async def get(self, pending_id: str) -> Pending | None:
        body = await self._client.get(self._ids + pending_id)
        return Pending(**orjson.loads(body)) if body is not None else None

    async def update(self, pending: Pending) -> None:
        if await self._client.exists(self._ids + pending.id):
            await self._write(pending)

    async def take(self, pending_id: str) -> Pending | None:
        current = await self.get(pending_id)
        asked = self._asked_key(current.owner, current.key, current.exposition) if current is not None else ""
        body = await self._take(keys=[self._ids + pending_id], args=[self._states, asked])
        return Pending(**orjson.loads(body)) if body is not None else None

    async def by_state(self, state: str) -> Pending | None:
        pending_id = await self._client.get(self._states + state)
        return await self.get(_text(pending_id)) if pending_id is not None else None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
