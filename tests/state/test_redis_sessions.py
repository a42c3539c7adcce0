"""The session stores behind one contract: in memory, and in Redis (shared by replicas)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from apimcp.protocol.sessions import (
    MemorySessionStore,
    Session,
    SessionChange,
    SessionsFull,
    SessionStore,
    new_session_id,
)
from apimcp.protocol.versions import find_revision
from apimcp.state.redis_sessions import RedisSessionStore
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio
REVISION = find_revision("2025-06-18")


def new(endpoint: str = "e1", **fields: object) -> Session:
    assert REVISION is not None
    return Session(id=new_session_id(), endpoint=endpoint, revision=REVISION, **fields)  # type: ignore[arg-type]


@pytest.fixture(params=["memory", "redis"])
async def make(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[object]:
    clients: list[Redis] = []

    def build(idle: float = 60, total: int = 100, per_endpoint: int = 100, per_caller: int = 100) -> SessionStore:
        if request.param == "memory":
            return MemorySessionStore(idle, max_sessions=total, max_sessions_per_endpoint=per_endpoint,
                                      max_sessions_per_caller=per_caller)  # fmt: skip
        client = Redis.from_url(REDIS_URL)
        clients.append(client)
        return RedisSessionStore(client, redis_prefix, idle, max_sessions=total, max_sessions_per_endpoint=per_endpoint,
                                 max_sessions_per_caller=per_caller)  # fmt: skip

    yield build
    for client in clients:
        await client.aclose()


async def test_a_record_comes_back_as_it_was_saved(make: object) -> None:
    store = make()  # type: ignore[operator]
    session = new(capabilities_json=b'{"elicitation":{}}', client_info_json=b'{"name":"c"}', principal="iss sub=a")
    await store.create(session)
    found = await store.get(session.id)
    assert found is not None
    assert (found.endpoint, found.revision, found.capabilities_json, found.client_info_json, found.principal) == (
        "e1", REVISION, b'{"elicitation":{}}', b'{"name":"c"}', "iss sub=a")  # fmt: skip
    for change in (SessionChange("log_level", "debug"), SessionChange("initialized"),
                   SessionChange("subscribe", "file:///a"), SessionChange("subscribe", "file:///b"),
                   SessionChange("unsubscribe", "file:///b"), SessionChange("subscribe", "file:///a")):  # fmt: skip
        await store.change(found, change)
    assert (found.log_level, found.initialized, found.subscriptions) == ("debug", True, {"file:///a"})
    again = await store.get(session.id)
    assert again is not None
    assert (again.log_level, again.initialized, again.subscriptions) == ("debug", True, {"file:///a"})
    await store.change(again, SessionChange("unsubscribe", "file:///a"))
    assert (await store.get(session.id)).subscriptions == set()


async def test_changes_made_on_two_replicas_both_stay(make: object, redis_prefix: str) -> None:
    """The finding: a change wrote the whole record from a copy up to a second old, so a subscription made on one
    replica was undone by a log level set on another: the client, told it was subscribed, never heard an update."""
    store = make()  # type: ignore[operator]
    other = make() if isinstance(store, RedisSessionStore) else store  # type: ignore[operator]
    session = new()
    await store.create(session)
    here, there = await store.get(session.id), await other.get(session.id)
    assert here is not None and there is not None
    await store.change(here, SessionChange("subscribe", "test://text"))
    await other.change(there, SessionChange("log_level", "error"))  # its copy knew of no subscription
    store.forget_copy(session.id)
    found = await store.get(session.id)
    assert found is not None and (found.subscriptions, found.log_level) == ({"test://text"}, "error")


async def test_unknown_and_deleted_sessions_are_gone(make: object) -> None:
    store = make()  # type: ignore[operator]
    assert await store.get("nope") is None
    session = new()
    await store.create(session)
    assert await store.delete(session.id) is True
    assert await store.get(session.id) is None
    assert await store.delete(session.id) is False
    assert await store.touch(session.id) is False


async def test_the_limits_hold_in_total_and_per_endpoint(make: object) -> None:
    store = make(total=3, per_endpoint=2)  # type: ignore[operator]
    await store.create(new("a"))
    await store.create(new("a"))
    with pytest.raises(SessionsFull) as full:
        await store.create(new("a"))
    assert (full.value.scope, full.value.retry_after > 0) == ("endpoint", True)
    kept = new("b")
    await store.create(kept)
    with pytest.raises(SessionsFull) as full:
        await store.create(new("c"))
    assert full.value.scope == "server"
    await store.delete(kept.id)
    await store.create(new("c"))  # a deleted session frees its place


async def test_one_caller_holds_its_share_of_an_endpoint_and_no_more(make: object) -> None:
    """The finding: one anonymous client opened every session an endpoint may hold (1,000 in under a second), and
    everyone else was refused for the half hour they took to expire."""
    store = make(per_endpoint=10, per_caller=3)  # type: ignore[operator]
    mallory = [new("a", caller="client 203.0.113.9") for _ in range(3)]
    for session in mallory:
        await store.create(session)
    with pytest.raises(SessionsFull) as full:
        await store.create(new("a", caller="client 203.0.113.9"))
    assert (full.value.scope, full.value.retry_after > 0) == ("caller", True)
    await store.create(new("a", caller="client 198.51.100.7"))  # another caller: room still
    await store.create(new("a", caller="https://idp.example sub=alice"))
    await store.create(new("b", caller="client 203.0.113.9"))  # the same caller on another endpoint
    await store.delete(mallory[0].id)
    await store.create(new("a", caller="client 203.0.113.9"))  # its own ended session freed its place


async def test_idle_sessions_expire_and_free_their_place_and_a_touch_keeps_one(make: object) -> None:
    store = make(idle=1.0, total=2)  # type: ignore[operator]
    idle, kept = new(), new()
    await store.create(idle)
    await store.create(kept)
    for _ in range(3):  # touched every 0.4 s, 0.6 s before it would expire
        await asyncio.sleep(0.4)
        assert await store.touch(kept.id)
    assert await store.get(idle.id) is None
    await store.create(new())  # the expired one no longer counts


async def test_two_replicas_sharing_a_redis_see_the_same_sessions(redis_prefix: str) -> None:
    first_client, second_client = Redis.from_url(REDIS_URL), Redis.from_url(REDIS_URL)
    first, second = RedisSessionStore(first_client, redis_prefix), RedisSessionStore(second_client, redis_prefix)
    try:
        session = new()
        await first.create(session)
        seen = await second.get(session.id)
        assert seen is not None
        assert seen.id == session.id
        await second.delete(session.id)
        assert await first.get(session.id) is None
    finally:
        await first_client.aclose()
        await second_client.aclose()
