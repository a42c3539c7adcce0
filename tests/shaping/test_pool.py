"""The shaping pool: jobs in child processes, bounded, and never a call left waiting when a process fails."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from apimcp.shaping.limits import ShapingLimits
from apimcp.shaping.pool import INLINE, ShapingPool, ShapingUnavailable
from tests.shaping import jobs


@pytest.fixture
def pool() -> Iterator[ShapingPool]:
    shaping = ShapingPool(ShapingLimits(workers=1, max_waiting=1, job_seconds=20))
    yield shaping
    shaping.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is not alive
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_job_runs_in_a_shaping_process_and_its_bytes_come_back(pool: ShapingPool) -> None:
    done = asyncio.run(pool.run(jobs.echo, {"n": 1}, [b"abc", b"x" * 3_000_000]))
    assert done.pid != os.getpid() and done.reply["pid"] == done.pid
    assert done.reply["args"] == {"n": 1}
    assert done.blobs == [b"cba", b"x" * 3_000_000]
    assert pool.pids == [done.pid]  # kept for the next job
    assert asyncio.run(pool.run(jobs.echo, {})).pid == done.pid


def test_a_full_queue_is_refused_with_a_clear_error(pool: ShapingPool) -> None:
    async def scenario() -> str:
        running = asyncio.ensure_future(pool.run(jobs.sleep, {"seconds": 1}))
        waiting = asyncio.ensure_future(pool.run(jobs.sleep, {"seconds": 0}))
        await asyncio.sleep(0)
        try:
            with pytest.raises(ShapingUnavailable) as refused:
                await pool.run(jobs.echo, {})
        finally:
            await asyncio.gather(running, waiting)
        return str(refused.value)

    assert asyncio.run(scenario()) == (
        "The gateway is shaping as many large results as it can (1 at once, 1 waiting): try again shortly"
    )
    assert asyncio.run(pool.run(jobs.echo, {})).reply["args"] == {}  # room again once they are done


def test_a_process_killed_mid_job_gives_an_error_and_the_next_job_works(pool: ShapingPool) -> None:
    first = asyncio.run(pool.run(jobs.echo, {})).pid
    with pytest.raises(
        ShapingUnavailable, match=r"^The process shaping this large result stopped \(killed by signal 9\)"
    ):
        asyncio.run(pool.run(jobs.die, {}))
    assert not alive(first)
    after = asyncio.run(pool.run(jobs.echo, {})).pid
    assert after != first and pool.pids == [after]


def test_a_job_past_its_time_has_its_process_killed_and_replaced() -> None:
    pool = ShapingPool(ShapingLimits(workers=1, job_seconds=2))
    try:
        pid = asyncio.run(pool.run(jobs.echo, {})).pid
        with pytest.raises(ShapingUnavailable, match=r"took longer than the 2 s allowed"):
            asyncio.run(pool.run(jobs.sleep, {"seconds": 600}))
        assert asyncio.run(pool.run(jobs.echo, {})).pid != pid
        assert not alive(pid)
    finally:
        pool.close()


def test_a_caller_that_goes_away_stops_its_job(pool: ShapingPool) -> None:
    async def scenario() -> int:
        pid = (await pool.run(jobs.echo, {})).pid
        call = asyncio.ensure_future(pool.run(jobs.sleep, {"seconds": 600}))
        await asyncio.sleep(0.5)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return pid

    pid = asyncio.run(scenario())
    assert asyncio.run(pool.run(jobs.echo, {})).pid != pid


def test_a_failing_job_is_told_by_its_error_type_only(pool: ShapingPool) -> None:
    with pytest.raises(ShapingUnavailable) as failed:
        asyncio.run(pool.run(jobs.fail, {}))
    assert str(failed.value) == "Shaping this large result failed in the gateway (KeyError)"
    assert asyncio.run(pool.run(jobs.echo, {})).reply["args"] == {}  # the same process goes on


def test_closing_the_pool_leaves_no_process() -> None:
    pool = ShapingPool(ShapingLimits(workers=2))

    async def two() -> list[int]:
        done = await asyncio.gather(pool.run(jobs.sleep, {"seconds": 0.3}), pool.run(jobs.sleep, {"seconds": 0.3}))
        return [d.pid for d in done]

    pids = asyncio.run(two())
    assert len(set(pids)) == 2 and pool.pids == sorted(pids)
    pool.close()
    assert pool.pids == [] and not any(alive(pid) for pid in pids)
    with pytest.raises(ShapingUnavailable, match="stopping"):
        asyncio.run(pool.run(jobs.echo, {}))


def test_inline_shaping_runs_the_same_jobs_here() -> None:
    done = asyncio.run(INLINE.run(jobs.echo, {"n": 2}, [b"ab"]))
    assert done.pid == os.getpid() and done.blobs == [b"ba"]


def test_no_lane_holds_more_than_half_of_the_places_and_others_still_get_in() -> None:
    """The finding: the pool was one queue for the whole gateway, so one exposition whose answers are large could
    take every place (running and waiting) and every other exposition's large answer was refused."""
    pool = ShapingPool(ShapingLimits(workers=1, max_waiting=3, job_seconds=20))
    flood, other = pool.lane("flood"), pool.lane("other")
    assert pool.lane_share == 2

    async def scenario() -> str:
        held = [asyncio.ensure_future(flood.run(jobs.sleep, {"seconds": 0.3})) for _ in range(2)]
        await asyncio.sleep(0)
        try:
            with pytest.raises(ShapingUnavailable) as refused:
                await flood.run(jobs.echo, {})
            assert (await other.run(jobs.echo, {"n": 1})).reply["args"] == {"n": 1}
        finally:
            await asyncio.gather(*held)
        return str(refused.value)

    try:
        assert asyncio.run(scenario()) == (
            "The gateway is shaping as many large results for this exposition as one may (2 at once or waiting): "
            "try again shortly"
        )
        assert asyncio.run(flood.run(jobs.echo, {})).reply["args"] == {}  # room again once they are done
    finally:
        pool.close()


def test_lanes_take_turns_for_the_next_free_process() -> None:
    """The finding: jobs ran in the order they came, so another exposition's job waited behind every job one
    exposition had queued."""
    pool = ShapingPool(ShapingLimits(workers=1, max_waiting=8, job_seconds=20))
    busy, other = pool.lane("busy"), pool.lane("other")
    finished: list[str] = []

    async def job(lane_name: str, n: int) -> None:
        await (busy if lane_name == "busy" else other).run(jobs.sleep, {"seconds": 0.1})
        finished.append(f"{lane_name}{n}")

    async def scenario() -> None:
        first = [asyncio.ensure_future(job("busy", n)) for n in range(1, 5)]
        await asyncio.sleep(0)
        await asyncio.gather(*first, job("other", 1))

    try:
        asyncio.run(scenario())
    finally:
        pool.close()
    assert finished.index("other1") < finished.index("busy3"), finished  # first come would put it last
    assert sorted(finished) == ["busy1", "busy2", "busy3", "busy4", "other1"]


def test_jobs_waiting_when_the_pool_closes_are_told() -> None:
    pool = ShapingPool(ShapingLimits(workers=1, max_waiting=4, job_seconds=20))

    async def scenario() -> list[BaseException | None]:
        started = [asyncio.ensure_future(pool.lane("a").run(jobs.sleep, {"seconds": 0.5})) for _ in range(3)]
        await asyncio.sleep(0.2)
        await asyncio.to_thread(pool.close)
        outcomes = await asyncio.gather(*started, return_exceptions=True)
        return [outcome if isinstance(outcome, BaseException) else None for outcome in outcomes]

    outcomes = asyncio.run(scenario())
    assert all(isinstance(outcome, ShapingUnavailable) for outcome in outcomes), outcomes
