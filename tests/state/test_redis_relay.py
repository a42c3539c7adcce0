"""The Redis relay's `sent()`: a DELETE is answered only once its "ended" message has been published, so another
replica already has it on its way when the client makes its next request there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio import Redis

from apimcp.protocol.relay import RelayKind
from apimcp.state.redis_relay import RedisRelay
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio


class _Member:
    def relayed(self, kind: RelayKind, session_id: str, body: bytes) -> None:
        pass


async def test_sent_returns_only_once_the_message_is_published(redis_prefix: str) -> None:
    client = Redis.from_url(REDIS_URL)
    relay = RedisRelay(client, redis_prefix)
    happened: list[str] = []
    publish = client.publish

    async def slow_publish(channel: Any, message: Any) -> Any:
        await asyncio.sleep(0.2)  # slower than the caller: without waiting, `sent()` would return first
        answer = await publish(channel, message)
        happened.append("published")
        return answer

    client.publish = slow_publish  # type: ignore[method-assign,assignment]
    member = _Member()
    try:
        relay.join("endpoint", member)
        relay.send(member, "endpoint", "ended", "session-1", b"null")
        await relay.sent()
        happened.append("sent() returned")
        assert happened == ["published", "sent() returned"]
        await relay.sent()  # nothing left: returns at once
    finally:
        await relay.close()
        await client.aclose()


async def test_sent_gives_up_after_a_second_while_redis_refuses(redis_prefix: str) -> None:
    client = Redis.from_url(REDIS_URL)
    relay = RedisRelay(client, redis_prefix)
    publish = client.publish

    async def refused(channel: Any, message: Any) -> Any:
        raise ConnectionError("refused")

    client.publish = refused  # type: ignore[method-assign,assignment]
    member = _Member()
    try:
        relay.join("endpoint", member)
        relay.send(member, "endpoint", "ended", "session-1", b"null")
        async with asyncio.timeout(30):  # a guard far above the one second it waits
            await relay.sent()  # bounded: returns though nothing could be published
        assert [number for number, _ in relay._outbox] == [1]  # still waiting for Redis
    finally:
        client.publish = publish  # type: ignore[method-assign]
        await relay.close()
        await client.aclose()
