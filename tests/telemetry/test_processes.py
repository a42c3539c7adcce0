"""Telemetry configured as operators do, by environment variables, in real processes: `apimcp serve CONFIG`
exports its spans over OTLP/HTTP and serves /metrics; `apimcp serve` (control plane and gateway in one process)
counts the control plane's requests by route template."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.processes import Background, free_port
from tests.telemetry.conftest import call_tool, new_traceparent
from tests.telemetry.otlp_receiver import Receiver, otlp_receiver
from tests.telemetry.test_metrics import scrape, value


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as received:
        yield received


def telemetry_env(receiver: Receiver) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_SERVICE_NAME": "gateway-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "APIMCP_METRICS": "on",
    }


def test_a_gateway_process_exports_spans_and_serves_metrics(tmp_path: Path, receiver: Receiver) -> None:
    with live_aiohttp(echo_app) as echo:
        config = tmp_path / "gateway.yaml"
        config.write_text(
            f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n'
            "expositions:\n  echo: {services: [echo]}\n"
        )
        port = free_port()
        gateway = Background(tmp_path / "g.log", "serve", str(config), "--port", str(port), env=telemetry_env(receiver))
        base = f"http://127.0.0.1:{port}"
        try:
            gateway.wait_for_http(f"{base}/healthz")
            traceparent, trace_id, parent = new_traceparent()
            body = call_tool(f"{base}/mcp/echo", "get_item", {"itemId": "7"}, headers={"traceparent": traceparent})
            echoed = {k.lower(): v for k, v in body["result"]["structuredContent"]["headers"].items()}
            spans = receiver.wait_for(lambda spans: sum(s.trace_id == trace_id for s in spans) >= 2)
            samples, _ = scrape(base)
        finally:
            gateway.stop()
    ours = [s for s in spans if s.trace_id == trace_id]
    (server,) = [s for s in ours if s.is_server]
    (client,) = [s for s in ours if s.is_client]
    assert server.service_name == "gateway-under-test"
    assert server.parent_span_id == parent and client.parent_span_id == server.span_id
    assert echoed["traceparent"] == f"00-{trace_id}-{client.span_id}-01"
    labels = {"exposition": "default/echo", "method": "tools/call", "outcome": "success"}
    assert value(samples, "apimcp_mcp_requests_total", **labels) == 1
    assert "/metrics is open to whoever reaches this port" in gateway.output()


def test_the_control_plane_counts_requests_by_route_template(tmp_path: Path, receiver: Receiver) -> None:
    port = free_port()
    data = tmp_path / "data"
    env = {**telemetry_env(receiver), "APIMCP_METRICS_TOKEN": "scrape-me"}
    served = Background(tmp_path / "serve.log", "serve", "--port", str(port), "--data-dir", str(data), env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        served.wait_for_http(f"{base}/healthz")
        token = (data / "bootstrap-token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx2.get(f"{base}/api/v1/organization", headers=auth).status_code == 200
        for n in range(3):
            assert httpx2.get(f"{base}/api/v1/services/no-such-{n}", headers=auth).status_code == 404
        assert httpx2.get(f"{base}/api/v1/organization").status_code == 401
        assert httpx2.get(f"{base}/metrics").status_code == 401
        samples, text = scrape(base, "scrape-me")
    finally:
        served.stop()
    requests = "apimcp_control_plane_requests_total"
    assert value(samples, requests, method="GET", route="/api/v1/organization", status="200") == 1
    assert value(samples, requests, method="GET", route="/api/v1/organization", status="401") == 1
    routes = {dict(labels)["route"] for name, labels in samples if name == requests}
    assert "no-such" not in text  # the template, never the path typed
    assert any(route.startswith("/api/v1/services/{") for route in routes), routes
    assert value(samples, "apimcp_expositions") == 0
    assert value(samples, "apimcp_sync_connected") == 1
    assert value(samples, "apimcp_sync_lag_seconds") == 0
