"""Where imports run: worker threads of their own, with a bounded queue in front of them.

An import reads a description (maybe from a slow URL), parses and converts it: seconds
of blocking work. Run in the thread pool every other route of the REST API shares, a
few dozen slow imports would use it up and freeze the whole API. Here they get a fixed
number of workers and a fixed number of places to wait; beyond that an import is turned
away at once (503 with Retry-After) instead of piling up.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

DEFAULT_WORKERS = 8
DEFAULT_QUEUED = 32
DEFAULT_RETRY_AFTER_SECONDS = 10


@dataclass(frozen=True, slots=True)
class ImportCapacity:
    workers: int = DEFAULT_WORKERS
    """Imports (and attachments) that run at once."""
    queued: int = DEFAULT_QUEUED
    """Imports that may wait for a worker; one more is refused with 503."""
    retry_after_seconds: int = DEFAULT_RETRY_AFTER_SECONDS
    """What a refused client is told to wait."""

    def __post_init__(self) -> None:
        if self.workers <= 0 or self.queued < 0 or self.retry_after_seconds <= 0:
            raise ValueError("workers and retry_after_seconds must be positive, queued at least 0")


class ImportsBusy(Exception):
    """Every worker is busy and every waiting place taken."""

    def __init__(self, capacity: ImportCapacity) -> None:
        super().__init__(
            f"the server is busy with as many imports as it takes ({capacity.workers} running and "
            f"{capacity.queued} waiting, its import capacity); try again in {capacity.retry_after_seconds} s"
        )
        self.retry_after_seconds = capacity.retry_after_seconds


class ImportPool:
    """A bounded executor for imports; threads start on first use."""

    def __init__(self, capacity: ImportCapacity | None = None) -> None:
        self.capacity = capacity or ImportCapacity()
        self._places = threading.BoundedSemaphore(self.capacity.workers + self.capacity.queued)
        self._executor = ThreadPoolExecutor(self.capacity.workers, thread_name_prefix="apimcp-import")

    async def run(self, work: Callable[[], T]) -> T:
        """The result of `work`, run on a worker thread; ImportsBusy at once when there is no place for it."""
        if not self._places.acquire(blocking=False):
            raise ImportsBusy(self.capacity)
        try:
            future: Future[T] = self._executor.submit(work)
        except BaseException:
            self._places.release()
            raise
        future.add_done_callback(lambda _: self._places.release())
        outcome = asyncio.wrap_future(future)
        try:
            return await asyncio.shield(outcome)
        except asyncio.CancelledError:
            # Work that started may be using what the caller hands back when cancelled (its database session):
            # wait until it ends (each import has a deadline); work still waiting is simply dropped.
            if not future.cancel():
                await asyncio.wait([outcome])
            raise

    def shutdown(self) -> None:
        """Drop waiting imports and let the running ones end by themselves (each has a deadline)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
