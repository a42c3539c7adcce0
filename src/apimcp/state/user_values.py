"""Credentials users supplied for backends, by owner (a user, or a session when nobody is authenticated) and
secret; sealed at rest, forgotten when they expire, bounded in number.

The in-memory store is the default for one process; a shared store (Redis) implements the same interface for
replicas. Values are JSON objects (`token`, and for OAuth connections `refresh_token`, `expires_at`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any

import orjson

from apimcp.state.sealed import ValueSealer

DEFAULT_TTL_SECONDS = 8 * 3600.0
DEFAULT_MAX_VALUES = 100_000


def value_place(owner: str, key: str) -> str:
    """What a sealed value is bound to: it opens under no other owner or secret."""
    return f"user-value\x00{owner}\x00{key}"


class UserValueStore(ABC):
    @abstractmethod
    async def get(self, owner: str, key: str) -> dict[str, Any] | None: ...

    @abstractmethod
    async def put(self, owner: str, key: str, value: dict[str, Any], ttl_seconds: float | None = None) -> None: ...

    @abstractmethod
    async def delete(self, owner: str, key: str) -> None: ...


class MemoryUserValueStore(UserValueStore):
    def __init__(
        self,
        sealer: ValueSealer | None = None,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_values: int = DEFAULT_MAX_VALUES,
    ) -> None:
        self._sealer = sealer or ValueSealer()
        self._ttl = ttl_seconds
        self._max = max_values
        self._values: OrderedDict[tuple[str, str], tuple[float, bytes]] = OrderedDict()

    async def get(self, owner: str, key: str) -> dict[str, Any] | None:
        entry = self._values.get((owner, key))
        if entry is None:
            return None
        expires, sealed = entry
        if time.monotonic() >= expires:
            del self._values[(owner, key)]
            return None
        plain = self._sealer.open(value_place(owner, key), sealed)
        return orjson.loads(plain) if plain is not None else None

    async def put(self, owner: str, key: str, value: dict[str, Any], ttl_seconds: float | None = None) -> None:
        sealed = self._sealer.seal(value_place(owner, key), orjson.dumps(value))
        self._values[(owner, key)] = (time.monotonic() + (ttl_seconds or self._ttl), sealed)
        self._values.move_to_end((owner, key))
        while len(self._values) > self._max:
            self._values.popitem(last=False)  # the least recently stored goes first

    async def delete(self, owner: str, key: str) -> None:
        self._values.pop((owner, key), None)

    def __len__(self) -> int:
        return len(self._values)
