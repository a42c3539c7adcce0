"""Which MCP services a gateway asked to read again, and when: so that a server that keeps saying its lists
changed costs one reading a minute, not one per notification (`upstream_refresh.reread_soon`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

MAX_REMEMBERED = 10_000


class Rereads:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._asked: dict[str, float] = {}
        self._lock = threading.Lock()
        self._running: set[asyncio.Task[None]] = set()

    def due(self, key: str, quiet_seconds: float) -> bool:
        """Whether `key` (an organization's service) may be read again now (and, if so, it is noted as asked now)."""
        now = self._clock()
        with self._lock:
            last = self._asked.get(key)
            if last is not None and now - last < quiet_seconds:
                return False
            self._asked.pop(key, None)
            self._asked[key] = now
            while len(self._asked) > MAX_REMEMBERED:
                del self._asked[next(iter(self._asked))]
            return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._asked.pop(key, None)

    def track(self, task: asyncio.Task[None]) -> None:
        """Keep `task` alive until it ends."""
        self._running.add(task)
        task.add_done_callback(self._running.discard)
