"""The sealed `requestState` values opened already, in Redis: a state one replica opened is refused by all of them
(`protocol.request_state.UsedStates`). Each is a key that expires with its state. A Redis that cannot be reached is a
`StoreUnavailable`: the request is answered 503, never opened without the check."""

from __future__ import annotations

import math

from apimcp.state.redis_connection import RedisClient
from apimcp.state.redis_sessions import reached


class RedisUsedStates:
    def __init__(self, client: RedisClient, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}rs:"

    async def first_use(self, nonce: str, expires_at: float) -> bool:
        key, until = self._prefix + nonce, max(1, math.ceil(expires_at))
        set_now = await reached(self._client.set(key, b"1", nx=True, exat=until))  # away: a 503, not an error
        return bool(set_now)
