"""Credentials users supplied for backends, by owner (a user, or a session when nobody is authenticated) and
secret; sealed at rest, forgotten when they expire, bounded in number.

The same store keeps the gateway's own values (its OAuth clients' tokens, its registrations at authorization
servers). In memory, three tiers let go of their least recently stored values apart: users', sessions' (anyone
may open as many sessions as they like: a twentieth of the places) and the gateway's own (as many as its
configuration makes), so that a flood of sessions never pushes out a user's credential or the gateway's.

The in-memory store is the default for one process; a shared store (Redis) implements the same interface for
replicas. Values are JSON objects (`token`, and for OAuth connections `refresh_token`, `expires_at`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any

import orjson

from apimcp.state.owners import is_anonymous, is_user
from apimcp.state.sealed import ValueSealer

DEFAULT_TTL_SECONDS = 8 * 3600.0
DEFAULT_MAX_VALUES = 100_000
ANONYMOUS_SHARE = 20
"""Sessions' values hold at most 1/ANONYMOUS_SHARE of the places."""


def _tier(owner: str) -> str:
    return "users" if is_user(owner) else "sessions" if is_anonymous(owner) else "gateway"


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
        self._limits = {"users": max_values, "sessions": max(1, max_values // ANONYMOUS_SHARE), "gateway": max_values}
        self._tiers: dict[str, OrderedDict[tuple[str, str], tuple[float, bytes]]] = {
            name: OrderedDict() for name in self._limits
        }

    async def get(self, owner: str, key: str) -> dict[str, Any] | None:
        values = self._tiers[_tier(owner)]
        entry = values.get((owner, key))
        if entry is None:
            return None
        expires, sealed = entry
        if time.monotonic() >= expires:
            del values[(owner, key)]
            return None
        plain = self._sealer.open(value_place(owner, key), sealed)
        return orjson.loads(plain) if plain is not None else None

    async def put(self, owner: str, key: str, value: dict[str, Any], ttl_seconds: float | None = None) -> None:
        sealed = self._sealer.seal(value_place(owner, key), orjson.dumps(value))
        tier = _tier(owner)
        values = self._tiers[tier]
        values[(owner, key)] = (time.monotonic() + (ttl_seconds or self._ttl), sealed)
        values.move_to_end((owner, key))
        while len(values) > self._limits[tier]:
            values.popitem(last=False)  # the least recently stored of its tier goes first

    async def delete(self, owner: str, key: str) -> None:
        self._tiers[_tier(owner)].pop((owner, key), None)

    def __len__(self) -> int:
        return sum(len(values) for values in self._tiers.values())
