from __future__ import annotations

import asyncio
import threading
import time

import pytest

from apimcp.artifacts.scripting.pool import Admission, WorkerPool

pytestmark = pytest.mark.anyio

FAR = 10.0


async def test_admission_queues_in_order_and_refuses_beyond_its_queue() -> None:
    admission = Admission(capacity=1, per_share=1, max_waiting=1)
    assert await admission.acquire("a", time.monotonic() + FAR)
    second = asyncio.create_task(admission.acquire("a", time.monotonic() + FAR))
    await asyncio.sleep(0)
    assert admission.waiting == 1
    assert not await admission.acquire("a", time.monotonic() + FAR)  # the queue is full: refused at once
    admission.release("a")
    assert await second
    admission.release("a")
    assert await admission.acquire("a", time.monotonic())  # free again, no waiting needed


async def test_a_flooding_share_takes_its_cap_and_the_others_still_get_places() -> None:
    # Finding M1 of issue 21: one exposition's clients calling a looping script made every other exposition's
    # scripts answer "all script workers are busy".
    admission = Admission(capacity=4, per_share=3, max_waiting=2)
    assert [await admission.acquire("flood", time.monotonic() + FAR) for _ in range(3)] == [True] * 3
    queued = [asyncio.create_task(admission.acquire("flood", time.monotonic() + FAR)) for _ in range(2)]
    await asyncio.sleep(0)
    assert not await admission.acquire("flood", time.monotonic() + FAR)  # its own queue is full
    assert admission.held("flood") == 3 and admission.waiting == 2
    assert await admission.acquire("quiet", time.monotonic())  # the fourth place, without waiting
    assert not await admission.acquire("third", time.monotonic())  # all four are taken now
    for task in queued:
        task.cancel()
    await asyncio.gather(*queued, return_exceptions=True)


async def test_a_freed_place_goes_to_the_share_holding_fewest_before_older_waiters() -> None:
    admission = Admission(capacity=2, per_share=2, max_waiting=4)
    assert await admission.acquire("flood", time.monotonic() + FAR)
    assert await admission.acquire("flood", time.monotonic() + FAR)
    flood = asyncio.create_task(admission.acquire("flood", time.monotonic() + FAR))
    await asyncio.sleep(0)
    quiet = asyncio.create_task(admission.acquire("quiet", time.monotonic() + FAR))  # arrives after
    await asyncio.sleep(0)
    admission.release("flood")
    assert await quiet
    assert not flood.done()
    admission.release("quiet")
    assert await flood
    assert admission.held("flood") == 2 and admission.held("quiet") == 0


async def test_a_waiter_gives_up_at_its_deadline() -> None:
    admission = Admission(capacity=1, per_share=1, max_waiting=4)
    assert await admission.acquire("a", time.monotonic() + FAR)
    start = time.monotonic()
    assert not await admission.acquire("a", time.monotonic() + 0.05)
    assert 0.04 < time.monotonic() - start < 2  # timing-ok: forty times its 0.05 s deadline
    assert admission.waiting == 0


@pytest.mark.parametrize("granted_first", [False, True])
async def test_a_place_handed_to_a_cancelled_waiter_is_passed_on(granted_first: bool) -> None:
    admission = Admission(capacity=1, per_share=1, max_waiting=4)
    assert await admission.acquire("a", time.monotonic() + FAR)
    waiter = asyncio.create_task(admission.acquire("b", time.monotonic() + FAR))
    await asyncio.sleep(0)
    admission.release("a")  # chosen: the grant is on its way
    if granted_first:
        await asyncio.sleep(0)  # ... and arrives before the cancellation
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0)
    assert admission.held("b") == 0
    assert await admission.acquire("a", time.monotonic())  # the place was not lost


async def test_a_release_from_another_thread_wakes_the_waiter() -> None:
    admission = Admission(capacity=1, per_share=1, max_waiting=1)
    assert await admission.acquire("a", time.monotonic() + FAR)
    waiter = asyncio.create_task(admission.acquire("a", time.monotonic() + FAR))
    await asyncio.sleep(0)
    threading.Thread(target=admission.release, args=("a",)).start()
    assert await asyncio.wait_for(waiter, FAR)


def test_the_pool_bounds_its_threads_and_restores_the_stack_size() -> None:
    before = threading.stack_size()
    pool = WorkerPool(threads=2, stack_bytes=16 * 2**20, name="probe")
    gate = threading.Event()
    names: list[str] = []

    def job(n: int) -> int:
        gate.wait(5)
        names.append(threading.current_thread().name)
        return n

    futures = [pool.submit(lambda n=n: job(n)) for n in range(3)]  # type: ignore[misc]
    assert pool.threads == 2
    assert threading.stack_size() == before
    gate.set()
    assert [f.result(5) for f in futures] == [0, 1, 2]
    assert set(names) <= {"probe-0", "probe-1"}
    pool.close()
    with pytest.raises(RuntimeError, match="probe is closed"):
        pool.submit(lambda: 1)


def test_a_job_that_raises_fails_its_future_only() -> None:
    pool = WorkerPool(threads=1, stack_bytes=8 * 2**20, name="probe")

    def broken() -> int:
        raise ValueError("bad job")

    with pytest.raises(ValueError, match="bad job"):
        pool.submit(broken).result(5)
    assert pool.submit(lambda: 7).result(5) == 7
    pool.close()
