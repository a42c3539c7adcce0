"""Resilient backends through a gateway, against a backend that fails, flaps and slows on command: idempotent
calls retried, others not; a backend that keeps failing refused at once by its breaker, then probed back; a
service whose first URL is down served by the next; a read-only tool's answer kept and identical calls made
once, per user; each shown in the metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import pytest
from aiohttp import web
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.metrics import Metrics
from tests.gateway.conftest import gateway_of
from tests.support.live_aiohttp import live_aiohttp
from tests.support.live_server import live_app
from tests.support.processes import free_port

pytestmark = pytest.mark.anyio

SPEC = Path(__file__).parent / "flaky_api.yaml"


@dataclass
class Flaky:
    """What the backend does next: fail `failures` more calls with `status` (0: drop the connection), answer after
    `delay` seconds; and how many calls it received, per path."""

    failures: int = 0
    status: int = 503
    delay: float = 0.0
    seen: dict[str, int] = field(default_factory=dict)

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            self.seen[request.path] = self.seen.get(request.path, 0) + 1
            await asyncio.sleep(self.delay)
            if self.failures > 0:
                self.failures -= 1
                if self.status == 0:
                    assert request.transport is not None
                    request.transport.close()
                    raise ConnectionResetError
                return web.json_response({"error": "not now"}, status=self.status)
            user = request.headers.get("X-User", "")
            return web.json_response({"path": request.path, "calls": self.seen[request.path], "user": user})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app


def _config(backend: str) -> str:
    plans = {
        "retried": {"retries": {"attempts": 3, "backoff_ms": 10, "max_backoff_ms": 20}},
        "guarded": {"breaker": {"failures": 3, "open_seconds": 1}},
        "cached": {"cache": {"ttl_seconds": 60, "tools": {"create_item": 60}}},
    }
    expositions = "\n".join(
        f"  {name}: {{services: [flaky], resilience: {json.dumps(settings)}}}" for name, settings in plans.items()
    )
    return f"""
services:
  flaky:
    openapi: {SPEC}
    backend: "{backend}"
    timeout: 5
    header_policy: {{allow: [X-User]}}
  spare:
    openapi: {SPEC}
    backend: "http://127.0.0.1:{free_port()}"
    fallbacks: ["{backend}"]
    timeout: 5
expositions:
{expositions}
  failover: {{services: [spare]}}
"""


@pytest.fixture(scope="module")
def flaky() -> Flaky:
    return Flaky()


@pytest.fixture(scope="module")
def metrics() -> Iterator[Metrics]:
    found = Metrics()
    install(Telemetry(metrics=found))
    yield found
    install(OFF)


@pytest.fixture(scope="module")
def gateway(flaky: Flaky, metrics: Metrics, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("resilience")
    with live_aiohttp(flaky.app) as backend, live_app(lambda: gateway_of(_config(backend), tmp)) as base:
        yield base.replace("//localhost:", "//127.0.0.1:")


@pytest.fixture(autouse=True)
def fresh(flaky: Flaky) -> None:
    flaky.failures, flaky.status, flaky.delay = 0, 503, 0.0
    flaky.seen.clear()


async def _call(url: str, tool: str, arguments: dict[str, object], user: str = "") -> types.CallToolResult:
    http = httpx2.AsyncClient(headers={"X-User": user} if user else None, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:  # type: ignore[arg-type]
        return await client.call_tool(tool, arguments)


def _count(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.parametrize("status", [503, 0])
async def test_an_idempotent_call_is_retried_and_succeeds(gateway: str, flaky: Flaky, status: int) -> None:
    flaky.failures, flaky.status = 2, status
    result = await _call(f"{gateway}/mcp/retried", "get_item", {"itemId": "1"})
    assert not result.is_error, result
    assert result.structured_content is not None and result.structured_content["calls"] == 3
    assert flaky.seen == {"/items/1": 3}


async def test_a_call_that_is_not_idempotent_is_not_retried(gateway: str, flaky: Flaky, metrics: Metrics) -> None:
    flaky.failures = 1
    before = _count(metrics, "apimcp_backend_resilience_total", exposition="default/retried", event="retry")
    result = await _call(f"{gateway}/mcp/retried", "create_item", {"name": "x"})
    assert result.is_error and flaky.seen == {"/items": 1}
    assert _count(metrics, "apimcp_backend_resilience_total", exposition="default/retried", event="retry") == before


async def test_a_failing_backend_is_refused_at_once_then_probed_back(gateway: str, flaky: Flaky) -> None:
    url = f"{gateway}/mcp/guarded"
    flaky.failures = 100
    for _ in range(3):
        assert (await _call(url, "get_item", {"itemId": "1"})).is_error
    assert flaky.seen == {"/items/1": 3}
    refused = await _call(url, "get_item", {"itemId": "1"})
    assert refused.is_error and "circuit open" in refused.content[0].text  # type: ignore[union-attr]
    assert flaky.seen == {"/items/1": 3}  # not called
    flaky.failures = 0
    await asyncio.sleep(1.1)
    assert not (await _call(url, "get_item", {"itemId": "1"})).is_error  # the probe
    assert not (await _call(url, "get_item", {"itemId": "1"})).is_error
    assert flaky.seen == {"/items/1": 5}


async def test_a_read_only_answer_is_kept_per_user_and_identical_calls_made_once(
    gateway: str, flaky: Flaky, metrics: Metrics
) -> None:
    url = f"{gateway}/mcp/cached"
    first = await _call(url, "get_item", {"itemId": "7"}, user="ada")
    again = await _call(url, "get_item", {"itemId": "7"}, user="ada")
    assert first.structured_content == again.structured_content == {"path": "/items/7", "calls": 1, "user": "ada"}
    bob = await _call(url, "get_item", {"itemId": "7"}, user="bob")
    assert bob.structured_content == {"path": "/items/7", "calls": 2, "user": "bob"}  # never ada's answer
    flaky.delay = 0.3
    together = await asyncio.gather(*(_call(url, "get_item", {"itemId": "8"}, user="ada") for _ in range(5)))
    assert {r.structured_content["calls"] for r in together} == {1}  # type: ignore[index]
    assert flaky.seen["/items/8"] == 1
    created = [await _call(url, "create_item", {"name": "x"}) for _ in range(2)]
    assert [r.structured_content["calls"] for r in created] == [1, 2]  # type: ignore[index]  # changes things: never kept
    assert _count(metrics, "apimcp_answer_cache_total", exposition="default/cached", outcome="hit") >= 1
    assert _count(metrics, "apimcp_answer_cache_total", exposition="default/cached", outcome="coalesced") >= 1


async def test_a_service_with_several_urls_is_served_by_the_next_when_the_first_is_down(
    gateway: str, flaky: Flaky, metrics: Metrics
) -> None:
    url = f"{gateway}/mcp/failover"
    before = _count(metrics, "apimcp_backend_resilience_total", exposition="default/failover", event="failover")
    created = await _call(url, "create_item", {"name": "x"})  # never sent to the first: moved on, though a POST
    read = await _call(url, "get_item", {"itemId": "4"})
    assert not created.is_error and not read.is_error, (created, read)
    assert flaky.seen == {"/items": 1, "/items/4": 1}
    after = _count(metrics, "apimcp_backend_resilience_total", exposition="default/failover", event="failover")
    assert after >= before + 2
