"""The import pool: imports run on workers of their own, a bounded number wait, the rest are turned away."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from apimcp.control.import_pool import ImportCapacity, ImportPool, ImportsBusy

pytestmark = pytest.mark.anyio


async def test_work_runs_on_the_pool_and_its_outcome_comes_back() -> None:
    pool = ImportPool(ImportCapacity(workers=2, queued=0))
    try:
        assert (await pool.run(lambda: threading.current_thread().name)).startswith("apimcp-import")

        def failing() -> None:
            raise ValueError("bad description")

        with pytest.raises(ValueError, match="bad description"):
            await pool.run(failing)
    finally:
        pool.shutdown()


async def test_beyond_the_workers_and_the_queue_work_is_turned_away_at_once() -> None:
    pool = ImportPool(ImportCapacity(workers=1, queued=1, retry_after_seconds=4))
    release = threading.Event()
    try:
        running = [asyncio.ensure_future(pool.run(lambda: release.wait(5))) for _ in range(2)]
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(ImportsBusy) as caught:
            await pool.run(lambda: True)
        assert time.monotonic() - started < 2  # timing-ok: at once, not after the 5 s the running work may take
        assert caught.value.retry_after_seconds == 4
        assert str(caught.value) == (
            "the server is busy with as many imports as it takes (1 running and 1 waiting, its import capacity); "
            "try again in 4 s"
        )
        release.set()
        assert await asyncio.gather(*running) == [True, True]
        assert await pool.run(lambda: "a place again") == "a place again"
    finally:
        release.set()
        pool.shutdown()


async def test_a_cancelled_caller_waits_for_its_running_work_to_end() -> None:
    """Running work may use what its caller releases once cancelled (the request's database session)."""
    pool = ImportPool(ImportCapacity(workers=1, queued=1))
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def work() -> None:
        started.set()
        release.wait(30)
        finished.set()

    try:
        caller = asyncio.ensure_future(pool.run(work))
        assert await asyncio.to_thread(started.wait, 30)  # running on its worker: it can no longer be dropped
        caller.cancel()
        for _ in range(3):
            await asyncio.sleep(0)  # the cancellation reaches the caller ...
        assert not caller.done()  # ... which waits for its running work
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert finished.is_set()
    finally:
        release.set()
        pool.shutdown()
