"""The 2026-07-28 `requestState` values opened already, in memory and in Redis: each opens once, on any replica."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from apimcp.protocol.request_state import MemoryUsedStates, UsedStates
from apimcp.protocol.sessions import StoreUnavailable
from apimcp.state.redis_used_states import RedisUsedStates
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis"])
async def used(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[tuple[UsedStates, UsedStates]]:
    """Two replicas' views of the store (one and the same in memory)."""
    if request.param == "memory":
        shared = MemoryUsedStates()
        yield shared, shared
        return
    clients = Redis.from_url(REDIS_URL), Redis.from_url(REDIS_URL)
    yield RedisUsedStates(clients[0], redis_prefix), RedisUsedStates(clients[1], redis_prefix)
    for client in clients:
        await client.aclose()


async def test_a_state_opens_once_on_any_replica(used: tuple[UsedStates, UsedStates]) -> None:
    one, other = used
    until = time.time() + 60
    assert await one.first_use("n1", until)
    assert not await other.first_use("n1", until)
    assert not await one.first_use("n1", until)
    assert await other.first_use("n2", until)


async def test_memory_forgets_expired_states_and_keeps_a_bounded_number() -> None:
    used = MemoryUsedStates(most=3)
    assert await used.first_use("gone", time.time() - 1)
    assert await used.first_use("gone", time.time() + 60)  # its own expiry passed: forgotten
    for n in range(5):
        assert await used.first_use(f"n{n}", time.time() + 60)
    assert len(used._until) == 3


async def test_a_redis_that_cannot_be_reached_is_a_store_away() -> None:
    client = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    try:
        with pytest.raises(StoreUnavailable):
            await RedisUsedStates(client, "apimcp-test:").first_use("n1", time.time() + 60)
    finally:
        await client.aclose()
