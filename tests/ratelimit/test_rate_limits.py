"""Rate limits: settings read and refused clearly, token buckets in memory and in Redis behind one contract,
the limiter's order, and a gateway answering 429 with Retry-After (shared by replicas on one Redis)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from apimcp.gateway.config import ConfigError, parse_config
from apimcp.protocol.caller import caller_key
from apimcp.ratelimit.buckets import BucketStore, MemoryBuckets
from apimcp.ratelimit.limiter import RateLimiter
from apimcp.ratelimit.policy import RateLimit, RateLimitError, RateLimits, parse_rate, parse_rate_limits
from tests.gateway.conftest import echo_config, live_gateway

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100/s", RateLimit(100, 1.0, 100)),
        ("6000/min", RateLimit(6000, 60.0, 6000)),
        ("1000/10s", RateLimit(1000, 10.0, 1000)),
        ("20/s, burst=40", RateLimit(20, 1.0, 40)),
        ("5 / hour", RateLimit(5, 3600.0, 5)),
    ],
)
def test_rates_are_read_from_text(text: str, expected: RateLimit) -> None:
    assert parse_rate(text) == expected


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"exposition": "100/fortnight"}, "rate_limit.exposition", "not a rate such as 100/min"),
        ({"exposition": "0/s"}, "rate_limit.exposition.requests", "whole number from 1"),
        ({"caller": {"requests": 5, "per_seconds": 0}}, "rate_limit.caller.per_seconds", "between 0.001"),
        ({"caller": {"requests": 5, "extra": 1}}, "rate_limit.caller", "unknown fields: extra"),
        ({"everyone": "5/s"}, "rate_limit", "unknown fields: everyone"),
        ("5/s", "rate_limit", "{exposition: ..., caller: ...}"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(raw: object, field: str, words: str) -> None:
    with pytest.raises(RateLimitError) as refused:
        parse_rate_limits(raw)
    assert refused.value.field == field and words in str(refused.value)


def test_settings_are_kept_as_json_and_read_back() -> None:
    limits = parse_rate_limits({"exposition": "100/min", "caller": {"requests": 5, "burst": 10}})
    assert limits.as_json() == {
        "exposition": {"requests": 100, "per_seconds": 60.0, "burst": 100},
        "caller": {"requests": 5, "per_seconds": 1.0, "burst": 10},
    }
    assert parse_rate_limits(limits.as_json()) == limits
    assert parse_rate_limits(None).as_json() is None and not parse_rate_limits({})


async def test_a_bucket_allows_its_burst_then_says_when_to_come_back(buckets: BucketStore) -> None:
    assert [await buckets.take("k", 2.0, 3) for _ in range(3)] == [0.0, 0.0, 0.0]
    wait = await buckets.take("k", 2.0, 3)
    assert 0.25 < wait <= 0.5  # one token every 0.5 s, less what the four takes took (a quarter second to spare)
    assert await buckets.take("other", 2.0, 3) == 0.0  # buckets are apart
    await asyncio.sleep(wait + 0.02)
    assert await buckets.take("k", 2.0, 3) == 0.0


async def test_the_memory_store_forgets_the_least_recently_used_buckets_as_full() -> None:
    buckets = MemoryBuckets(max_keys=2)
    for key in ("a", "b", "c"):
        await buckets.take(key, 0.001, 1)
    assert len(buckets) == 2
    assert await buckets.take("a", 0.001, 1) == 0.0  # forgotten, so full again
    assert await buckets.take("c", 0.001, 1) > 0


async def test_each_caller_has_a_limit_and_everyone_together_the_exposition_s() -> None:
    limits = RateLimits(exposition=RateLimit(3, 60.0, 3), caller=RateLimit(2, 60.0, 2))
    limiter = RateLimiter("expo", limits, MemoryBuckets())
    alice = [await limiter.check("alice") for _ in range(5)]
    assert alice[:2] == [None, None]  # her own two are spent, then she is refused by her own limit
    assert all(refused is not None and refused.limit == "caller" and refused.seconds > 0 for refused in alice[2:])
    assert await limiter.check("bob") is None  # her refused requests took nothing from the exposition's three
    carol = await limiter.check("carol")  # the exposition's three are spent
    assert carol is not None and carol.reason == "exposition_rate_limit" and carol.seconds > 0


async def test_a_store_that_fails_lets_requests_through() -> None:
    class Broken(BucketStore):
        async def take_up_to(self, key: str, rate: float, burst: int, count: int) -> tuple[int, float]:
            raise ConnectionError("away")

    limiter = RateLimiter("expo", RateLimits(exposition=RateLimit(1, 60.0, 1)), Broken())
    assert await limiter.check("alice") is None


def test_callers_are_counted_by_principal_else_address() -> None:
    assert caller_key("https://idp sub=alice", "10.0.0.1") == "p:https://idp sub=alice"
    assert caller_key(None, "10.0.0.1") == "a:10.0.0.1"
    assert caller_key(None, None) == "a:unknown"


def test_an_ipv6_client_is_counted_by_its_slash_64_and_an_ipv4_one_by_its_address() -> None:
    # one host is given a whole /64: its other addresses must not be fresh callers
    assert (
        caller_key(None, "2001:db8:1:2:aaaa::1")
        == caller_key(None, "2001:db8:1:2:ffff:1:2:3")
        == ("a:2001:db8:1:2::/64")
    )
    assert caller_key(None, "2001:db8:1:3::1") == "a:2001:db8:1:3::/64"
    assert caller_key(None, "fe80::1%eth0") == "a:fe80::/64"
    assert caller_key(None, "::ffff:10.0.0.1") == caller_key(None, "10.0.0.1") != caller_key(None, "10.0.0.2")
    assert caller_key(None, "/run/apimcp.sock") == "a:/run/apimcp.sock"  # not an IP address: as it is


def test_a_gateway_answers_429_with_retry_after_beyond_the_limit() -> None:
    extra = "expositions:\n  echo:\n    services: [echo]\n    rate_limit: {exposition: 3/min}\n"
    with live_gateway(echo_config("{backend}", extra)) as mcp:
        answers = [mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "1"}}) for _ in range(4)]
    assert [answer.status for answer in answers] == [200, 200, 200, 429]
    refused = answers[3]
    assert refused.headers["retry-after"] == "20"  # one request every 20 s
    told = "Rate limit of exposition 'echo' reached (all its callers together): try again in 20 s"
    assert refused.error["message"] == told


def test_a_request_refused_by_a_rate_limit_is_audited_as_429(caplog: pytest.LogCaptureFixture) -> None:
    """Finding: a 429 at the HTTP door left no audit event (a script's refused inner call did)."""
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    extra = "expositions:\n  echo:\n    services: [echo]\n    audit: true\n    rate_limit: {caller: 2/min}\n"
    with live_gateway(echo_config("{backend}", extra)) as mcp:
        statuses = [mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "1"}}).status
                    for _ in range(3)]  # fmt: skip

        def events() -> list[dict[str, Any]]:
            return [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]

        for _ in range(500):  # a request's event is written once its answer is sent
            if len(events()) >= 3:
                break
            time.sleep(0.01)
    assert statuses == [200, 200, 429]
    recorded = events()
    assert [(e["action"], e["outcome"]) for e in recorded] == [  # one event each: the refused request's is its own
        ("tools/call", "success"),
        ("tools/call", "success"),
        ("rate_limit", "refused"),
    ]
    refused = recorded[2]
    assert (refused["status"], refused["reason"], refused["retry_after"]) == (429, "caller_rate_limit", 30)
    assert refused["target"] == "/mcp/echo"
    assert refused["client"] == "127.0.0.1" and refused["exposition"] == "echo"


def test_a_429_at_the_door_says_whose_limit_it_was() -> None:
    """Finding: the door said "Rate limit of this exposition reached" when the caller's own limit refused."""
    extra = "expositions:\n  echo:\n    services: [echo]\n    rate_limit: {caller: 1/min, exposition: 100/min}\n"
    with live_gateway(echo_config("{backend}", extra)) as mcp:
        answers = [mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "1"}}) for _ in range(2)]
    assert [answer.status for answer in answers] == [200, 429]
    assert answers[1].error == {
        "code": -32000,
        "message": "Rate limit per caller of exposition 'echo' reached: try again in 60 s",
        "data": {"retryAfter": 60, "reason": "caller_rate_limit"},
    }


def test_a_configuration_with_a_bad_rate_limit_names_it(tmp_path: Path) -> None:
    text = echo_config("http://127.0.0.1:1", "expositions:\n  echo:\n    services: [echo]\n    rate_limit: {x: 1}\n")
    with pytest.raises(ConfigError) as refused:
        parse_config(text, "gateway.yaml", tmp_path)
    assert "rate_limit has unknown fields: x" in str(refused.value)
