"""Token buckets: the interface, and this process's memory.

`take` spends one token of the bucket `key` (capacity `burst`, refilled at `rate` per second) and answers
0 when there was one, else the seconds until there will be. The memory store keeps at most `max_keys`
buckets, the least recently used forgotten first (a forgotten bucket is a full one: forgetting never
refuses anyone). Replicas share buckets in Redis (`apimcp.state.redis_buckets`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_MAX_KEYS = 100_000


class BucketStore(ABC):
    @abstractmethod
    async def take(self, key: str, rate: float, burst: int) -> float:
        """Spend one token: 0.0 when allowed, else the seconds until a token is there."""


class MemoryBuckets(BucketStore):
    def __init__(self, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], float] = time.monotonic) -> None:
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._max_keys = max_keys
        self._clock = clock

    def __len__(self) -> int:
        return len(self._buckets)

    async def take(self, key: str, rate: float, burst: int) -> float:
        now = self._clock()
        tokens, at = self._buckets.get(key, (float(burst), now))
        tokens = min(float(burst), tokens + (now - at) * rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            wait = 0.0
        else:
            self._buckets[key] = (tokens, now)
            wait = (1.0 - tokens) / rate
        self._buckets.move_to_end(key)
        while len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)
        return wait
