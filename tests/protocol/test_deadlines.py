"""A wait under a shared deadline: the deadline's cancellation is taken back, and only it."""

from __future__ import annotations

import asyncio

import pytest

from apimcp.protocol.deadlines import SharedDeadline


@pytest.mark.anyio
async def test_a_wait_past_the_deadline_times_out_and_its_task_goes_on() -> None:
    deadline = SharedDeadline(0.01, grain=0.01)
    watch = deadline.watch()
    try:
        await asyncio.sleep(30)
        timed_out = False
    except asyncio.CancelledError:
        timed_out = watch.timed_out()
        if not timed_out:
            raise
    finally:
        watch.done()
    task = asyncio.current_task()
    assert timed_out and task is not None and task.cancelling() == 0
    await asyncio.sleep(0.05)  # nothing cancels it later


@pytest.mark.anyio
async def test_a_cancellation_from_elsewhere_goes_through_even_when_the_deadline_fired_too() -> None:
    deadline = SharedDeadline(0.01, grain=0.01)
    said: list[bool] = []

    async def wait() -> None:
        watch = deadline.watch()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # the caller's cancellation, arriving as the deadline's is handled
            said.append(watch.timed_out())
            raise
        finally:
            watch.done()

    waiting = asyncio.ensure_future(wait())
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert said == [False] and not deadline.expired


@pytest.mark.anyio
async def test_a_wait_ended_in_time_is_not_cancelled_later() -> None:
    deadline = SharedDeadline(0.02, grain=0.01)
    deadline.watch().done()
    await asyncio.sleep(0.1)  # past the deadline: this task is no longer watched
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0 and not deadline.expired
