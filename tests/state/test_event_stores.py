"""Streams' events kept for clients that resume, behind one contract, in memory and in Redis."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from apimcp.protocol.backlog import Backlog, Claimed, Marks, MemoryBacklog
from apimcp.protocol.event_store import EventStore, MemoryEventStore, StreamRecorder, split_event_id
from apimcp.state import redis_events
from apimcp.state.redis_backlog import RedisBacklog
from apimcp.state.redis_events import RedisEventStore
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[EventStore]:
    if request.param == "memory":
        yield MemoryEventStore(0.5, max_events=3)
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisEventStore(client, redis_prefix, 0.5, max_events=3)
    await client.aclose()


async def test_events_are_numbered_kept_and_replayed_after_an_id(store: EventStore) -> None:
    for n in range(1, 3):
        assert await store.append("s1", "session-a", "post", b'{"n":%d}' % n, last=False) == n
    assert await store.info("s1") == (await store.info("s1"))
    info = await store.info("s1")
    assert info is not None and (info.session_id, info.kind, info.ended) == ("session-a", "post", False)
    assert await store.after("s1", 0, 0) == [(1, b'{"n":1}'), (2, b'{"n":2}')]
    assert await store.after("s1", 1, 0) == [(2, b'{"n":2}')]
    assert await store.after("s1", 2, 0) == []
    await store.append("s1", "session-a", "post", b'{"n":3}', last=True)
    info = await store.info("s1")
    assert info is not None and info.ended
    assert await store.info("unknown") is None
    assert await store.after("unknown", 0, 0) == []


async def test_a_follower_hears_the_next_event_without_polling(store: EventStore) -> None:
    await store.append("s2", "session-a", "get", b"1", last=False)

    async def later() -> None:
        await asyncio.sleep(0.1)
        await store.append("s2", "session-a", "get", b"2", last=False)

    writer = asyncio.create_task(later())
    async with asyncio.timeout(30):  # a follower that did not hear it would wait its hour
        assert await store.after("s2", 1, 3600) == [(2, b"2")]
    await writer
    assert await store.after("s2", 2, 0.1) == []  # nothing came: an empty answer once the wait is over


async def test_followers_past_the_blocking_bound_leave_the_pool_to_everyone_else(
    redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: each follower of a resumed stream held a pooled connection in `XREAD BLOCK`, so one client
    resuming a stream 100 times left no connection for anyone (503s, and rate limits let through). Past
    `MAX_BLOCKING_READS` a follower waits without a connection, and reads again after its wait."""
    monkeypatch.setattr(redis_events, "MAX_BLOCKING_READS", 2)
    client = Redis.from_url(REDIS_URL, max_connections=4)
    store = RedisEventStore(client, redis_prefix, 30)
    try:
        await store.append("s4", "session-a", "post", b"1", last=False)
        followers = []
        for _ in range(10):  # one after the other, as clients resume (their first reads do not all meet)
            followers.append(asyncio.create_task(store.after("s4", 1, 1.0)))
            await asyncio.sleep(0.02)
        await store.append("s4", "session-a", "post", b"2", last=False)  # another client's work goes on
        assert await store.info("s4") is not None
        async with asyncio.timeout(10):
            assert await asyncio.gather(*followers) == [[(2, b"2")]] * 10  # each hears it, at most a wait later
    finally:
        await client.aclose()


async def test_streams_keep_their_newest_events_and_expire(store: EventStore) -> None:
    for n in range(1, 51):
        await store.append("s3", "session-a", "get", str(n).encode(), last=False)
    kept = await store.after("s3", 0, 0)
    assert kept[-1] == (50, b"50")
    assert [n for n, _ in kept] == [48, 49, 50]
    await asyncio.sleep(0.7)
    assert await store.info("s3") is None


async def test_an_id_is_never_given_out_twice_when_a_stream_was_forgotten_meanwhile(store: EventStore) -> None:
    """The finding: a stream quiet for longer than the retention (a tool running five minutes, an idle GET stream)
    started again at 1, so its next event went out as `K.1` again, and a client resuming after the first `K.1`
    was told there was nothing: the response was lost."""
    recorder = StreamRecorder(store, "session-a", "post")
    first = await recorder.record(b"1")
    assert first is not None and first.endswith(b".1")
    await asyncio.sleep(0.7)  # past the retention: the store forgets the stream
    last = await recorder.record(b"2", last=True)
    assert last is not None and last.endswith(b".2")
    stream, _ = split_event_id(last.decode()) or ("", 0)
    assert await store.after(stream, 1, 0) == [(2, b"2")]  # what a client resuming after the first gets


async def test_a_stream_ended_without_a_last_event_tells_its_follower(store: EventStore) -> None:
    """The finding: a cancelled request's stream was never marked ended, so a client resuming it waited (with
    keepalives) until the store forgot it, five minutes later."""
    await store.append("s5", "session-a", "post", b"1", last=False)
    await store.end("s5")
    info = await store.info("s5")
    assert info is not None and info.ended  # a resumed stream's follower checks it every tick, and stops
    assert await store.after("s5", 0, 0) == [(1, b"1")]
    await store.end("unknown")  # nothing to end: nothing is written
    assert await store.info("unknown") is None


async def test_the_memory_store_is_bounded_in_streams_and_bytes() -> None:
    store = MemoryEventStore(max_streams=2, max_bytes=100)
    for name in ("a", "b", "c"):
        await store.append(name, "s", "post", b"x", last=False)
    assert await store.info("a") is None and len(store) == 2
    await store.append("d", "s", "post", b"y" * 90, last=False)
    assert store.kept_bytes <= 100 and await store.info("d") is not None
    await store.append("d", "s", "post", b"z" * 90, last=False)
    assert store.kept_bytes <= 100
    assert await store.after("d", 0, 0) == [(2, b"z" * 90)]


async def test_event_ids_name_their_stream_and_number() -> None:
    recorder = StreamRecorder(MemoryEventStore(), "session-a", "post")
    first = await recorder.record(b"{}")
    assert first is not None
    stream, number = split_event_id(first.decode()) or ("", 0)
    assert number == 1 and len(stream) >= 20
    assert split_event_id("no-number") is None
    assert split_event_id("x." + "9" * 20) is None


# --- what a session's GET stream missed while none was open ---------------------------------------


@pytest.fixture(params=["memory", "redis"])
async def backlog(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[Backlog]:
    if request.param == "memory":
        yield MemoryBacklog(max_marks=3)
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisBacklog(client, redis_prefix, max_marks=3)
    await client.aclose()


async def test_a_session_s_undelivered_notifications_wait_for_its_next_stream(backlog: Backlog) -> None:
    keep = 60.0
    assert await backlog.park("s1", b'{"n":1}', keep, 32)
    assert await backlog.park("s1", b'{"n":2}', keep, 32)
    assert await backlog.park("s1", b'{"n":1}', keep, 32)  # kept once
    opened = await backlog.claim("s1", "stream-a", 30.0, keep)
    assert opened.heard is None and opened.parked == [b'{"n":1}', b'{"n":2}']
    assert not await backlog.park("s1", b'{"n":3}', keep, 32)  # a stream is open: it goes there
    await backlog.renew("s1", "stream-a", 30.0, keep)
    before = time.time()
    await backlog.release("s1", "stream-a", keep)
    assert await backlog.park("s1", b'{"n":4}', keep, 32)
    again = await backlog.claim("s1", "stream-b", 30.0, keep)
    assert again.heard is not None and again.heard >= before - 0.01 and again.parked == [b'{"n":4}']
    await backlog.release("s1", "stream-a", keep)  # an older stream ending does not end the newer one
    assert not await backlog.park("s1", b'{"n":5}', keep, 32)
    await backlog.forget("s1")  # the session ended
    assert await backlog.claim("s1", "stream-c", 30.0, keep) == Claimed(None, [])


async def test_parked_notifications_are_bounded_and_expire(backlog: Backlog) -> None:
    for n in range(10):
        assert await backlog.park("s2", b"%d" % n, 60.0, 3)
    assert (await backlog.claim("s2", "a", 0.05, 60.0)).parked == [b"7", b"8", b"9"]
    await asyncio.sleep(0.1)  # its stream's replica stopped renewing its lease: parking goes on
    assert await backlog.park("s2", b"late", 0.05, 3)
    await asyncio.sleep(0.15)
    assert (await backlog.claim("s2", "b", 30.0, 60.0)).parked == []


async def test_change_marks_say_once_what_changed_since_a_time(backlog: Backlog) -> None:
    before = time.time() - 0.01
    for change in ("tools", "tools", "resource:test://a"):
        await backlog.mark("mcp", change)
    await backlog.mark("other", "prompts")
    assert await backlog.marks_since("mcp", before) == Marks(frozenset({"tools", "resource:test://a"}), False)
    assert await backlog.marks_since("mcp", time.time() + 1) == Marks(frozenset(), False)
    assert await backlog.marks_since("nowhere", before) == Marks(frozenset(), False)
    for change in ("resource:test://b", "resource:test://c"):
        await backlog.mark("mcp", change)
    # beyond 3 marks the oldest is forgotten: whoever asks about a time before it hears of everything
    assert (await backlog.marks_since("mcp", before)).overflowed
