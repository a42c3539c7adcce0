"""Issue 21, M2: a JSON-RPC batch spends a rate-limit token per message, as its messages sent alone would (the
door's one token covers the first); those beyond the limit get the door's error each, none reaches the backend,
and the batch is one audit event saying how many were refused, each counted in the metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import pytest
from aiohttp import web
from redis.asyncio import Redis

from apimcp.backends.rest import close_session, new_session
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.plan import plan_gateway
from apimcp.ratelimit.buckets import BucketStore, MemoryBuckets
from apimcp.ratelimit.limiter import RateLimiter
from apimcp.ratelimit.policy import RateLimit, RateLimits
from apimcp.state import GatewayState
from apimcp.state.redis_buckets import RedisBuckets
from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.metrics import Metrics
from tests.gateway.conftest import HERE, echo_config
from tests.gateway.echo_backend import create_app as echo_app
from tests.state.conftest import REDIS_URL
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp
from tests.telemetry.test_metrics import scrape

pytestmark = pytest.mark.anyio

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def test_a_bucket_spends_at_most_what_it_holds_in_one_take(buckets: BucketStore) -> None:
    spent, wait = await buckets.take_up_to("k", 1.0, 3, 5)
    assert spent == 3 and 0.9 < wait <= 1.0  # the three it held; the next comes within the second
    spent, wait = await buckets.take_up_to("k", 1.0, 3, 2)
    assert spent == 0 and wait > 0
    assert await buckets.take_up_to("other", 1.0, 3, 2) == (2, 0.0)
    assert await buckets.take("other", 1.0, 3) == 0.0  # one request: the last token
    assert await buckets.take("other", 1.0, 3) > 0


async def test_takes_at_once_never_spend_more_than_the_bucket_holds(buckets: BucketStore) -> None:
    """Replicas charging batches at the same moment: each take is one step, none reads a bucket another is
    spending from (in Redis, one script)."""
    taken = await asyncio.gather(*(buckets.take_up_to("k", 0.001, 10, 3) for _ in range(20)))
    assert sum(spent for spent, _ in taken) == 10


async def test_a_batch_is_admitted_as_far_as_each_limit_goes() -> None:
    limits = RateLimits(exposition=RateLimit(5, 60.0, 5), caller=RateLimit(3, 60.0, 3))
    limiter = RateLimiter("expo", limits, MemoryBuckets())
    allowed, refused = await limiter.admit("alice", 10)
    assert allowed == 3 and refused is not None and refused.limit == "caller"  # her own three
    allowed, refused = await limiter.admit("bob", 10)
    assert allowed == 2 and refused is not None and refused.limit == "exposition"  # what alice left of the five
    allowed, refused = await limiter.admit("carol", 1)
    assert allowed == 0 and refused is not None and refused.reason == "exposition_rate_limit"  # all five spent


def _calls(count: int) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "get_item", "arguments": {"itemId": f"{i}"}},
        }
        for i in range(1, count + 1)
    ]


def _note() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}


REFUSED = {
    "code": -32000,
    "message": "Rate limit per caller of exposition 'echo' reached: try again in 15 s",  # 4/min: a token each 15 s
    "data": {"retryAfter": 15, "reason": "caller_rate_limit"},
}


@contextmanager
def limited_gateway(caller_limit: str, redis_prefix: str | None = None) -> Iterator[tuple[McpHttp, list[str]]]:
    """A client of exposition `echo` (audited, limited per caller) of a gateway keeping its buckets in memory, or
    in Redis under `redis_prefix`; and the paths the backend served, as it serves them."""
    served: list[str] = []

    def backend() -> web.Application:
        app = echo_app()

        @web.middleware
        async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
            served.append(request.path)
            return await handler(request)

        app.middlewares.append(count)
        return app

    with live_aiohttp(backend) as echo:
        exposition = "  echo:\n    services: [echo]\n    audit: true\n"
        limited = f"expositions:\n{exposition}    rate_limit: {{caller: {caller_limit}}}\n"
        plan = plan_gateway(parse_config(echo_config(f"{echo}/v1", limited), "test.yaml", HERE))

        @asynccontextmanager
        async def gateway() -> AsyncIterator[GatewayApp]:
            redis = Redis.from_url(REDIS_URL) if redis_prefix is not None else None
            buckets = RedisBuckets(redis, redis_prefix) if redis is not None and redis_prefix else MemoryBuckets()
            session = new_session()
            try:
                app = build_gateway(plan, session, state=GatewayState(buckets=buckets))
                yield app
                await app.runtime.close()
            finally:
                await close_session(session)
                if redis is not None:
                    await redis.aclose()

        with live_app(gateway) as base, McpHttp(f"{base}/mcp/echo") as mcp:
            yield mcp, served


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_batch_spends_a_token_per_message(store: str, redis_prefix: str) -> None:
    """Finding: a client limited to a few requests a minute sent 100 tools/call in one batch, for one token."""
    with limited_gateway("4/min", redis_prefix if store == "redis" else None) as (mcp, served):
        session = mcp.initialize("2025-03-26")  # initialize and notifications/initialized: two of the four
        reply = session.post(_calls(10))
    assert reply.status == 200
    answers = reply.body
    assert [answer["id"] for answer in answers] == list(range(1, 11))  # every request answered, in order
    assert [answer["result"]["isError"] for answer in answers[:2]] == [False, False]
    assert [answer["error"] for answer in answers[2:]] == [REFUSED] * 8
    assert served == ["/v1/items/1", "/v1/items/2"]  # the backend saw the two the limit allows, no more


def test_a_batch_the_limit_covers_runs_whole_its_messages_charged_once() -> None:
    with limited_gateway("12/min") as (mcp, served):
        session = mcp.initialize("2025-03-26")  # two of the twelve
        whole = session.post(_calls(10))  # the door's token for the first, nine more: the twelve are spent
        after = session.request("tools/call", {"name": "get_item", "arguments": {"itemId": "11"}})
    assert ["result" in answer for answer in whole.body] == [True] * 10 and len(served) == 10
    assert after.status == 429


def test_notifications_of_a_batch_count_as_requests() -> None:
    with limited_gateway("4/min") as (mcp, served):
        session = mcp.initialize("2025-03-26")  # two of the four
        reply = session.post([_note(), *_calls(1), _note(), {**_calls(2)[1]}])  # the door's, one more, two beyond
    assert [("result" in answer, answer["id"]) for answer in reply.body] == [(True, 1), (False, 2)]
    assert reply.body[1]["error"] == REFUSED
    assert served == ["/v1/items/1"]


def _next_message(lines: Iterator[str]) -> Any:
    return json.loads(next(line for line in lines if line.startswith("data:")).removeprefix("data:"))


def test_a_batch_over_http_sse_is_charged_so_too() -> None:
    """The 2024-11-05 transport runs each POST .../messages on the scope of its stream's GET: a 2025-03-26
    session over it may send batches too."""
    initialize = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "old", "version": "0"}}
    with (
        limited_gateway("5/min") as (mcp, served),
        httpx2.Client(timeout=10) as http,
        http.stream("GET", f"{mcp.url}/sse") as stream,  # the stream, and each POST below: four of the five
    ):
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        messages = mcp.url.split("/mcp/", 1)[0] + next(lines).removeprefix("data: ")
        http.post(messages, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize})
        assert _next_message(lines)["result"]["protocolVersion"] == "2025-03-26"
        http.post(messages, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert http.post(messages, json=_calls(10)).status_code == 202
        answers = _next_message(lines)
    assert ["result" in answer for answer in answers] == [True, True] + [False] * 8
    assert answers[2]["error"]["data"] == {"retryAfter": 12, "reason": "caller_rate_limit"}  # 5/min: one each 12 s
    assert served == ["/v1/items/1", "/v1/items/2"]


def test_a_batch_s_refused_messages_are_one_audit_event_and_each_a_refused_request(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    install(Telemetry(metrics=Metrics(), metrics_token="scrape-token-123"))
    try:
        with limited_gateway("4/min") as (mcp, _):
            mcp.initialize("2025-03-26").post(_calls(10))

            def events() -> list[dict[str, Any]]:
                return [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]

            for _ in range(500):  # a request's event is written once its answer is sent
                if sum(event["action"] == "tools/call" for event in events()) >= 2:
                    break
                time.sleep(0.01)
            samples, _ = scrape(mcp.url.rsplit("/mcp/", 1)[0], "scrape-token-123")
    finally:
        install(OFF)
    recorded = events()
    assert [e["outcome"] for e in recorded if e["action"] == "tools/call"] == ["success", "success"]
    (refused,) = [e for e in recorded if e["action"] == "rate_limit"]
    assert (refused["status"], refused["reason"], refused["retry_after"]) == (429, "caller_rate_limit", 15)
    assert (refused["messages"], refused["target"], refused["client"]) == (8, "/mcp/echo", "127.0.0.1")
    counted = {
        dict(labels)["reason"]: count
        for (name, labels), count in samples.items()
        if name == "apimcp_refused_requests_total" and dict(labels)["exposition"] == "default/echo"
    }
    assert counted == {"caller_rate_limit": 8}
