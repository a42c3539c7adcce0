"""The sealed `requestState` values opened already, in Redis: a state one replica opened is refused by all of them
(`protocol.request_state.UsedStates`). Each is a key that expires with its state."""

from __future__ import annotations

import math

from apimcp.state.redis_connection import RedisClient


class RedisUsedStates:
    def __init__(self, client: RedisClient, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}rs:"

    async def first_use(self, nonce: str, expires_at: float) -> bool:
        set_now = await self._client.set(self._prefix + nonce, b"1", nx=True, exat=max(1, math.ceil(expires_at)))
        return bool(set_now)
