"""Token buckets: the interface, and this process's memory.

`take_up_to` spends up to `count` tokens of the bucket `key` (capacity `burst`, refilled at `rate` per
second), as many whole ones as it holds, in one step, and answers how many it spent and, when fewer than
`count`, the seconds until the next one is there; `take` spends one (a request). The memory store keeps at
most `max_keys` buckets, the least recently used forgotten first (a forgotten bucket is a full one:
forgetting never refuses anyone). Replicas share buckets in Redis (`apimcp.state.redis_buckets`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_MAX_KEYS = 100_000


class BucketStore(ABC):
    @abstractmethod
    async def take_up_to(self, key: str, rate: float, burst: int, count: int) -> tuple[int, float]:
        """Spend up to `count` (at least 1) tokens at once: how many were spent, and 0.0 when all were, else the
        seconds until the next token is there. Nothing else spends from the bucket in between."""

    async def take(self, key: str, rate: float, burst: int) -> float:
        """Spend one token: 0.0 when allowed, else the seconds until a token is there."""
        _, wait = await self.take_up_to(key, rate, burst, 1)
        return wait


class MemoryBuckets(BucketStore):
    def __init__(self, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._max_keys = max_keys
        self._clock = clock

    def __len__(self) -> int:
        return len(self._buckets)

    async def take_up_to(self, key: str, rate: float, burst: int, count: int) -> tuple[int, float]:
        now = self._clock()
        tokens, at = self._buckets.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - at) * rate)
        spent = min(count, int(tokens))  # whole tokens only: a fraction pays for nothing
        tokens -= spent
        self._buckets[key] = (tokens, now)
        wait = 0.0 if spent == count else (1.0 - tokens) / rate
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
        return spent, wait
