"""A shaper for tests that runs jobs in a real pool of shaping processes and remembers which process ran each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apimcp.shaping.pool import Done, Job, ShapingPool


class Recording:
    def __init__(self, pool: ShapingPool) -> None:
        self.pool = pool
        self.pids: list[int] = []

    async def run(self, job: Job, args: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> Done:
        done = await self.pool.run(job, args, blobs)
        self.pids.append(done.pid)
        return done
