"""Tasks behind one contract, in memory and in Redis: an ended task stays as it ended, the first answer to an
input request stays, records expire their TTL after their last change, a session lists its own tasks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from redis.asyncio import Redis

from apimcp.protocol.tasks.records import TaskRecord
from apimcp.protocol.tasks.store import MemoryTaskStore, TaskStore
from apimcp.state.redis_tasks import RedisTaskStore
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisTaskStore(client, redis_prefix, poll_seconds=0.05)
    await client.aclose()


def _record(task_id: str = "t1", session: str | None = None, ttl_ms: int = 60_000) -> TaskRecord:
    now = time.time()
    return TaskRecord(
        task_id=task_id, owner="sub=alice", session_id=session, scope="mcp", status="working", created_at=now,
        updated_at=now, ttl_ms=ttl_ms, poll_interval_ms=500, lease_until=now + 15,
    )  # fmt: skip


async def test_a_task_round_trips_and_an_ended_one_stays_ended(store: TaskStore) -> None:
    record = _record()
    assert await store.create(record)
    assert not await store.create(record)  # an id is never reused
    waiting = record.moved("input_required", input_requests={"a": {"method": "elicitation/create", "params": {}}})
    assert await store.update(waiting)
    stored = await store.get("t1")
    assert stored is not None and stored.record.encode() == waiting.encode()
    done = waiting.moved("completed", input_requests={}, result=b'{"content":[],"isError":false}')
    assert await store.update(done)
    assert not await store.update(done.moved("cancelled"))
    final = await store.get("t1")
    assert final is not None and final.record.status == "completed"
    assert final.record.result == b'{"content":[],"isError":false}' and final.record.owner == "sub=alice"
    assert await store.get("nobody") is None
    assert not await store.update(_record("nobody"))


async def test_the_first_answer_to_a_key_stays(store: TaskStore) -> None:
    assert await store.create(_record())
    await store.respond("t1", {"a": {"action": "accept"}})
    await store.respond("t1", {"a": {"action": "decline"}, "b": {"action": "cancel"}})
    await store.respond("gone", {"a": {"action": "accept"}})  # nothing to answer: ignored
    stored = await store.get("t1")
    assert stored is not None
    assert stored.responses == {"a": {"action": "accept"}, "b": {"action": "cancel"}}
    assert await store.get("gone") is None


async def test_a_session_lists_its_tasks_newest_first(store: TaskStore) -> None:
    older = _record("t-old", "s1")
    assert await store.create(older)
    assert await store.create(replace(_record("t-new", "s1"), created_at=older.created_at + 1))
    assert await store.create(_record("t-else", "s2"))
    assert [r.task_id for r in await store.of_session("s1")] == ["t-new", "t-old"]
    assert await store.of_session("s3") == []


async def test_records_expire_their_ttl_after_the_last_change(store: TaskStore) -> None:
    # Each check that a record is still there comes at least 0.3 s before its expiry (one store call); each that
    # it is gone, after a sleep past it (a busy machine only makes that sleep longer).
    running = replace(_record(ttl_ms=300), lease_until=time.time() + 1.5)
    assert await store.create(running)
    await asyncio.sleep(0.35)
    assert await store.get("t1") is not None  # a running task outlives its TTL while its lease holds
    ended = running.moved("completed", result=b"{}")
    assert await store.update(ended)  # from its end, its TTL counts (its creation's has passed) ...
    assert await store.get("t1") is not None
    await asyncio.sleep(0.45)
    assert await store.get("t1") is None  # ... and its lease no longer does


async def test_a_waiter_hears_a_change(store: TaskStore) -> None:
    record = _record()
    assert await store.create(record)

    async def later() -> None:
        await asyncio.sleep(0.05)
        await store.respond("t1", {"a": {"action": "accept"}})

    writer = asyncio.create_task(later())
    async with asyncio.timeout(30):  # a waiter that did not hear it would wait its hour
        await store.changed("t1", 3600)
    await writer


async def test_the_memory_store_is_bounded() -> None:
    store = MemoryTaskStore(max_tasks=2, max_bytes=10_000)
    assert await store.create(_record("a"))
    assert await store.create(_record("b"))
    assert not await store.create(_record("c"))
    heavy = MemoryTaskStore(max_bytes=2_000)
    assert not await heavy.create(replace(_record("h"), result=b"x" * 5_000))
    expired = MemoryTaskStore(max_tasks=1)
    assert await expired.create(replace(_record("old", ttl_ms=1), status="completed"))
    await asyncio.sleep(0.01)
    assert await expired.create(_record("new"))  # the expired one made room
