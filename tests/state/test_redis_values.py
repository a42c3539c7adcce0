"""Users' values and pending elicitations behind one contract, in memory and in Redis (shared by replicas)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from apimcp.state.owners import session_owner, user_owner
from apimcp.state.pending import MemoryPendingStore, PendingStore, with_connection
from apimcp.state.redis_values import RedisPendingStore, RedisUserValueStore
from apimcp.state.sealed import ValueSealer
from apimcp.state.user_values import MemoryUserValueStore, UserValueStore
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio
KEY = bytes(range(32))


@pytest.fixture(params=["memory", "redis"])
async def stores(
    request: pytest.FixtureRequest, redis_prefix: str
) -> AsyncIterator[tuple[UserValueStore, PendingStore]]:
    if request.param == "memory":
        yield MemoryUserValueStore(ValueSealer(KEY)), MemoryPendingStore(ttl_seconds=0.5)
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisUserValueStore(client, ValueSealer(KEY), redis_prefix), RedisPendingStore(client, redis_prefix, 0.5)
    await client.aclose()


async def test_values_are_kept_per_owner_and_secret_and_expire(stores: tuple[UserValueStore, PendingStore]) -> None:
    values, _ = stores
    await values.put("user a", "org/s", {"token": "t-a"})
    await values.put("user b", "org/s", {"token": "t-b"}, ttl_seconds=0.2)
    assert await values.get("user a", "org/s") == {"token": "t-a"}
    assert await values.get("user a", "org/other") is None
    await asyncio.sleep(0.3)
    assert await values.get("user b", "org/s") is None
    await values.delete("user a", "org/s")
    assert await values.get("user a", "org/s") is None


async def test_pending_links_work_once_are_reused_while_waiting_and_expire(
    stores: tuple[UserValueStore, PendingStore],
) -> None:
    _, pending = stores
    first = await pending.open("user a", "org/s", "e1", "session-1")
    again = await pending.open("user a", "org/s", "e1", "session-2")
    assert (again.id, again.session_id) == (first.id, "session-2")
    started = with_connection(again)
    await pending.update(started)
    assert started.state is not None
    found = await pending.by_state(started.state)
    assert found is not None
    assert found.verifier == started.verifier
    assert await pending.take(first.id) is not None
    assert await pending.take(first.id) is None
    assert await pending.by_state(started.state) is None
    fresh = await pending.open("user a", "org/s", "e1", None)
    assert fresh.id != first.id  # the used link is not handed out again
    await asyncio.sleep(0.6)
    assert await pending.get(fresh.id) is None


async def test_a_value_sealed_by_one_replica_opens_on_another_and_is_bound_to_its_owner(redis_prefix: str) -> None:
    client = Redis.from_url(REDIS_URL)
    try:
        one = RedisUserValueStore(client, ValueSealer(KEY), redis_prefix)
        other = RedisUserValueStore(client, ValueSealer(KEY), redis_prefix)
        await one.put("user a", "org/s", {"token": "t-a"})
        assert await other.get("user a", "org/s") == {"token": "t-a"}
        raw = await client.get(f"{redis_prefix}{{users}}:user a\x00org/s")
        assert raw is not None
        assert b"t-a" not in raw  # sealed at rest
        await client.set(f"{redis_prefix}{{users}}:user b\x00org/s", raw)  # moved under another owner
        assert await other.get("user b", "org/s") is None
        stranger = RedisUserValueStore(client, ValueSealer(), redis_prefix)  # another key
        assert await stranger.get("user a", "org/s") is None
    finally:
        await client.aclose()


def _bounded(kind: str, client: Redis, prefix: str, max_pending: int) -> PendingStore:
    """A pending store of `kind` holding `max_pending` links, 3 per owner."""
    if kind == "memory":
        return MemoryPendingStore(max_pending=max_pending, max_per_owner=3)
    return RedisPendingStore(client, prefix, max_pending=max_pending, max_per_owner=3)


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_pending_links_are_bounded_per_owner_and_in_all_in_every_store(kind: str, redis_prefix: str) -> None:
    """The finding: Redis kept every pending link for its 10 minutes, however many one owner made (each
    connection started, then asked again, makes another); memory kept 16 per owner and 10,000 in all."""
    client = Redis.from_url(REDIS_URL)
    store = _bounded(kind, client, redis_prefix, max_pending=10)
    try:
        mine = [await store.open("user a", f"org/s{i}", "e1", None) for i in range(5)]
        assert [await store.get(p.id) is not None for p in mine] == [False, False, True, True, True]
        taken = await store.take(mine[4].id)
        assert taken is not None
        await store.open("user a", "org/s9", "e1", None)  # one taken frees its place: the others stay
        assert [await store.get(p.id) is not None for p in mine[2:4]] == [True, True]
        others = [await store.open(f"user {i}", "org/s", "e1", None) for i in range(20)]
        kept = [p for p in [*mine, *others] if await store.get(p.id) is not None]
        assert len(kept) <= 10 and others[-1] in kept
        if isinstance(store, RedisPendingStore):
            assert await client.zcard(f"{redis_prefix}{{pending}}:every") <= 10
    finally:
        await client.aclose()


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_sessions_nobody_authenticated_never_push_out_users_links_in_every_store(
    kind: str, redis_prefix: str
) -> None:
    """The finding: sessions are free to open, so anonymous callers opening links in new sessions pushed every
    user's link out (the oldest went first, whoever's it was)."""
    client = Redis.from_url(REDIS_URL)
    store = _bounded(kind, client, redis_prefix, max_pending=20)
    try:
        users = [await store.open(user_owner(f"u{i}"), "org/s", "e1", None) for i in range(5)]
        flood = [await store.open(session_owner(f"s{i}"), "org/s", "e1", f"s{i}") for i in range(50)]
        assert all([await store.get(p.id) is not None for p in users])
        kept = [p for p in flood if await store.get(p.id) is not None]
        assert kept == flood[-2:]  # a tenth of the store, the newest
        assert await store.take(kept[0].id) is not None
        assert await store.take(users[0].id) is not None
    finally:
        await client.aclose()


async def test_a_link_taken_while_it_was_being_written_again_stays_taken(redis_prefix: str) -> None:
    """The finding: moving a link to another session (or starting its connection) read it, then wrote it back
    whole: a `take` in between was undone, and the link worked a second time."""
    client = Redis.from_url(REDIS_URL)
    try:
        store = RedisPendingStore(client, redis_prefix)
        pending = await store.open(session_owner("s1"), "org/s", "e1", "s1")
        assert await store.take(pending.id) is not None
        assert not await store._write(with_connection(pending))  # what `open` and `update` write with
        assert await store.get(pending.id) is None and await store.take(pending.id) is None
    finally:
        await client.aclose()


async def test_values_of_sessions_never_push_out_users_or_the_gateway_s_own() -> None:
    values = MemoryUserValueStore(ValueSealer(KEY), max_values=100)
    await values.put(user_owner("alice"), "org/s", {"token": "alice's"})
    await values.put("gateway", "registration", {"client_id": "c"})
    for n in range(300):
        await values.put(session_owner(f"s{n}"), "org/s", {"token": f"t{n}"})
    assert await values.get(user_owner("alice"), "org/s") == {"token": "alice's"}
    assert await values.get("gateway", "registration") == {"client_id": "c"}
    assert len(values) == 2 + 5 and await values.get(session_owner("s299"), "org/s") == {"token": "t299"}
