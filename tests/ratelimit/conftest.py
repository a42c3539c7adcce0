"""The Redis fixtures of the state tests serve these too, and token buckets of both stores behind one contract."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from apimcp.ratelimit.buckets import BucketStore, MemoryBuckets
from apimcp.state.redis_buckets import RedisBuckets
from tests.state.conftest import REDIS_URL, redis_prefix

__all__ = ["buckets", "redis_prefix"]


@pytest.fixture(params=["memory", "redis"])
async def buckets(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[BucketStore]:
    if request.param == "memory":
        yield MemoryBuckets()
        return
    client = Redis.from_url(REDIS_URL)
    yield RedisBuckets(client, redis_prefix)
    await client.aclose()
