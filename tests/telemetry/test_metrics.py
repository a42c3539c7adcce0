"""`/metrics` as a scraper reads it, parsed with prometheus_client's own parser: requests, errors, latencies of
requests and backend calls, labels bounded whatever a client sends; a token when one is set."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

import apimcp
from apimcp.ratelimit.limiter import Refused
from apimcp.telemetry import Telemetry
from apimcp.telemetry.labels import refusal_label
from apimcp.telemetry.metrics import Metrics
from tests.gateway.conftest import echo_config, live_echo_gateway
from tests.support.mcp_http import McpHttp
from tests.telemetry.conftest import Traced, call_tool

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(base: str, token: str | None = None) -> tuple[Samples, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx2.get(f"{base}/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples, response.text


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_requests_errors_and_latencies_are_counted_by_exposition_method_and_outcome(traced: Traced) -> None:
    before, _ = scrape(traced.base)
    for _ in range(3):
        call_tool(f"{traced.base}/mcp/echo", "get_item", {"itemId": "1"})
    call_tool(f"{traced.base}/mcp/echo", "no_such_tool", {})
    call_tool(f"{traced.base}/mcp/echo", "get_status", {"code": 500})
    after, _ = scrape(traced.base)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    where = {"exposition": "default/echo", "method": "tools/call"}
    assert grew("apimcp_mcp_requests_total", **where, outcome="success") == 3
    assert grew("apimcp_mcp_requests_total", **where, outcome="error") == 1
    assert grew("apimcp_mcp_requests_total", **where, outcome="tool_error") == 1
    assert grew("apimcp_mcp_errors_total", **where, code="-32602") == 1
    assert grew("apimcp_mcp_request_duration_seconds_count", **where) == 5
    assert grew("apimcp_mcp_request_duration_seconds_sum", **where) > 0
    backend = {"exposition": "default/echo", "kind": "rest"}
    assert grew("apimcp_backend_call_duration_seconds_count", **backend, outcome="success") == 3
    assert grew("apimcp_backend_call_duration_seconds_count", **backend, outcome="failure") == 1
    assert grew("apimcp_backend_call_duration_seconds_bucket", **backend, outcome="success", le="+Inf") == 3


def test_what_a_client_makes_up_never_becomes_a_label(traced: Traced) -> None:
    before, _ = scrape(traced.base)
    with McpHttp(f"{traced.base}/mcp/echo") as mcp:
        session = mcp.initialize()
        for n in range(5):
            assert session.request(f"evil/method-{n}", {}).error["code"] == -32601
    call_tool(f"{traced.base}/mcp/echo", "evil_tool_name_xyz", {})
    after, text = scrape(traced.base)
    assert "evil" not in text
    where = {"exposition": "default/echo", "method": "other", "outcome": "error"}
    assert value(after, "apimcp_mcp_requests_total", **where) - value(before, "apimcp_mcp_requests_total", **where) == 5
    for name, labels in after:
        if name.startswith("apimcp_mcp_"):
            assert dict(labels)["method"] in {"other", "tools/call", "tools/list"}, labels


def test_the_gateway_state_is_shown_when_scraped(traced: Traced) -> None:
    samples, _ = scrape(traced.base)
    assert value(samples, "apimcp_expositions") == 3
    assert value(samples, "apimcp_snapshot_revision") >= 0
    assert ("apimcp_open_sessions", frozenset()) in samples
    assert value(samples, "apimcp_open_streams", exposition="default/echo") == 0
    assert ("process_cpu_seconds_total", frozenset()) in samples


def test_open_sessions_are_counted(traced: Traced) -> None:
    with McpHttp(f"{traced.base}/mcp/echo") as mcp:
        before, _ = scrape(traced.base)
        mcp.initialize()
        during, _ = scrape(traced.base)
    assert value(during, "apimcp_open_sessions") == value(before, "apimcp_open_sessions") + 1


DOORS = """expositions:
  limited: {services: [echo], rate_limit: {caller: 1/min}}
  keyed: {services: [echo], auth: {api_key: {env: DOOR_KEY}}}
"""


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Metrics on (no spans): an exposition limited to one request a minute per caller, one behind an API key."""
    from apimcp.telemetry import OFF, install

    install(Telemetry(metrics=Metrics(), metrics_token="scrape-token-123"))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("DOOR_KEY", "k" * 24)
            with live_echo_gateway(echo_config("{backend}", DOORS), tmp_path_factory.mktemp("doors")) as base:
                yield base
    finally:
        install(OFF)


def test_requests_refused_at_the_door_are_counted_by_exposition_and_reason(doors: str) -> None:
    """Finding: a 429 (or a 401) at the door was in no metric: an operator could not see rate limiting."""
    called = {"name": "get_item", "arguments": {"itemId": "1"}}
    with McpHttp(f"{doors}/mcp/limited") as mcp:
        statuses = [mcp.modern("tools/call", called).status for _ in range(3)]
    with McpHttp(f"{doors}/mcp/keyed") as mcp:
        keyless = mcp.modern("tools/call", called)
    assert statuses == [200, 429, 429] and keyless.status == 401
    samples, _ = scrape(doors, "scrape-token-123")
    refused = {
        (dict(labels)["exposition"], dict(labels)["reason"]): count
        for (name, labels), count in samples.items()
        if name == "apimcp_refused_requests_total"
    }
    assert refused == {("default/limited", "caller_rate_limit"): 2, ("default/keyed", "missing_api_key"): 1}
    where = {"exposition": "default/limited", "method": "tools/call", "outcome": "success"}
    assert value(samples, "apimcp_mcp_requests_total", **where) == 1  # the endpoint answered one, refused none


def test_every_reason_a_door_gives_is_a_refusal_label() -> None:
    """The reason label is bounded by a list: a reason added to a guard or the verifier must be added to it."""
    sources = [Path(apimcp.__file__).parent / "auth" / name for name in ("guard.py", "verifier.py")]
    given = {m.group(1) for path in sources for m in re.finditer(r'(?:TokenRejected\(|Refusal\([^)]*?)\s*"([a-z_]+)"',
                                                                  path.read_text())}  # fmt: skip
    given |= {Refused(limit, 1.0).reason for limit in ("caller", "exposition")}
    assert len(given) >= 10
    assert {reason for reason in given if refusal_label(reason) != reason} == set()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from apimcp.telemetry import OFF, install

    install(Telemetry(metrics=Metrics(), metrics_token="scrape-token-123"))
    try:
        with live_echo_gateway(echo_config("{backend}", "expositions:\n  echo: {services: [echo]}\n"),
                               tmp_path_factory.mktemp("guarded")) as base:  # fmt: skip
            yield base
    finally:
        install(OFF)


def test_a_metrics_token_is_required_when_set(guarded: str) -> None:
    assert httpx2.get(f"{guarded}/metrics", timeout=10).status_code == 401
    wrong = httpx2.get(f"{guarded}/metrics", headers={"Authorization": "Bearer scrape-token-12X"}, timeout=10)
    assert wrong.status_code == 401
    samples, _ = scrape(guarded, "scrape-token-123")
    assert value(samples, "apimcp_expositions") == 1
