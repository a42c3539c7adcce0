"""Tasks behind one contract, in memory and in Redis: an ended task stays as it ended, the first answer to an
input request stays, records expire their TTL after their last change, a session lists its own tasks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace

import pytest
from redis.asyncio import Redis

from apimcp.protocol.tasks.limits import TaskLimits, TasksFull
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


@pytest.fixture(params=["memory", "redis"])
async def limited(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[TaskStore]:
    limits = TaskLimits(max_tasks=4, max_tasks_per_owner=2, max_bytes=6_000, max_bytes_per_owner=4_000)
    if request.param == "memory":
        yield MemoryTaskStore(limits)
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisTaskStore(client, redis_prefix, poll_seconds=0.05, limits=limits)
    await client.aclose()


def _owned(task_id: str, owner: str, ttl_ms: int = 60_000) -> TaskRecord:
    return replace(_record(task_id, ttl_ms=ttl_ms), quota=owner)


async def _refusal(create: Awaitable[bool]) -> str:
    with pytest.raises(TasksFull) as refused:
        await create
    return refused.value.limit


async def test_tasks_are_bounded_per_owner_and_in_total_in_every_store(limited: TaskStore) -> None:
    assert await limited.create(_owned("a1", "p:alice"))
    assert await limited.create(_owned("a2", "p:alice"))
    assert await _refusal(limited.create(_owned("a3", "p:alice"))) == "max_tasks_per_owner"
    assert await limited.create(_owned("b1", "s:session-b"))
    assert await limited.create(_owned("c1", "a:10.0.0.3"))
    assert await _refusal(limited.create(_owned("d1", "p:dora"))) == "max_tasks"
    assert [await limited.get(t) is not None for t in ("a1", "a2", "b1", "c1", "a3", "d1")] == [True] * 4 + [False] * 2


async def test_an_owner_s_expired_tasks_make_room(limited: TaskStore) -> None:
    for task_id in ("old1", "old2"):
        assert await limited.create(replace(_owned(task_id, "p:alice", ttl_ms=1), status="completed"))
    await asyncio.sleep(0.05)
    assert await limited.create(_owned("new", "p:alice"))


async def test_results_are_kept_within_the_store_s_bytes(limited: TaskStore) -> None:
    assert await _refusal(limited.create(replace(_owned("big", "p:alice"), result=b'"' + b"x" * 8_000 + b'"'))) == (
        "max_bytes"
    )
    running = _owned("t1", "p:alice")
    assert await limited.create(running)
    too_big = running.moved("completed", result=b'"' + b"x" * 8_000 + b'"')
    assert await _refusal(limited.update(too_big)) == "max_bytes"
    assert await limited.update(running.moved("input_required", input_requests={"k": {"method": "m", "params": {}}}))
    assert await limited.update(running.moved("completed", result=b'"small"'))
    stored = await limited.get("t1")
    assert stored is not None and stored.record.result == b'"small"'


def _text(size: int) -> bytes:
    return b'"' + b"x" * size + b'"'


async def test_one_owner_s_results_are_kept_within_its_bytes_and_another_owner_s_still_fit(limited: TaskStore) -> None:
    too_big = replace(_owned("c1", "p:carol"), status="completed", result=_text(3_900))
    assert await _refusal(limited.create(too_big)) == "max_bytes_per_owner"  # a new task brings its result too
    first = _owned("a1", "p:alice")
    assert await limited.create(first)
    assert await limited.update(first.moved("completed", result=_text(2_500)))
    second = _owned("a2", "p:alice")
    assert await limited.create(second)
    assert await _refusal(limited.update(second.moved("completed", result=_text(1_000)))) == "max_bytes_per_owner"
    assert await limited.update(second.moved("completed", result=_text(10)))  # what still fits is kept
    bobs = _owned("b1", "p:bob")
    assert await limited.create(bobs)  # the store has room: alice's bytes are hers only
    assert await limited.update(bobs.moved("completed", result=_text(1_000)))
    stored = await limited.get("b1")
    assert stored is not None and stored.record.result == _text(1_000)


async def test_an_owner_s_expired_tasks_give_back_their_bytes(limited: TaskStore) -> None:
    old = replace(_owned("old", "p:alice", ttl_ms=1), status="completed", result=_text(3_000))
    assert await limited.create(old)
    await asyncio.sleep(0.05)
    running = _owned("new", "p:alice")
    assert await limited.create(running)
    assert await limited.update(running.moved("completed", result=_text(3_000)))


async def test_replicas_sharing_redis_keep_one_owner_s_cap_together(redis_prefix: str) -> None:
    client = Redis.from_url(REDIS_URL)
    limits = TaskLimits(max_tasks_per_owner=5)
    replicas = [RedisTaskStore(client, redis_prefix, limits=limits) for _ in range(2)]

    async def create(n: int) -> bool:
        try:
            return await replicas[n % 2].create(_owned(f"t{n}", "p:alice"))
        except TasksFull:
            return False

    created = await asyncio.gather(*(create(n) for n in range(40)))
    await client.aclose()
    assert created.count(True) == 5


async def test_a_session_s_list_of_tasks_forgets_expired_ones_in_redis(redis_prefix: str) -> None:
    """The finding: a session's sorted set of task ids was never trimmed (its expiry only pushed back), so a
    session making short-lived tasks grew it without end, and `tasks/list` read one record per id ever made."""
    client = Redis.from_url(REDIS_URL)
    store = RedisTaskStore(client, redis_prefix, poll_seconds=0.05, limits=TaskLimits(max_tasks_per_owner=5))
    try:
        for n in range(40):  # each lives 50 ms: at most a few are alive at once
            assert await store.create(replace(_record(f"t{n}", "s1", ttl_ms=50), lease_until=time.time()))
            await asyncio.sleep(0.03)
        listed = await client.zcard(store._session_key("s1"))
        assert listed <= 2 * 5 + 1, listed
        alive = await store.of_session("s1")
        assert [r.task_id for r in alive] == [f"t{n}" for n in range(39, 39 - len(alive), -1)]
    finally:
        await client.aclose()
