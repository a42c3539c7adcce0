"""When telemetry is on: the standard `OTEL_*` variables for spans, `APIMCP_METRICS*` for metrics; off, nothing
is instrumented (the request path pays nothing)."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from apimcp.backends.rest import RestBackend
from apimcp.gateway.exposition import ExpositionHandler
from apimcp.gateway.tool_entries import OperationEntry
from apimcp.telemetry import OFF, Telemetry, installed
from apimcp.telemetry.backend_calls import InstrumentedBackend
from apimcp.telemetry.config import TelemetryConfig, TelemetryConfigError, config_from_environment
from tests.gateway.conftest import echo_config, gateway_for, live_echo_gateway


@pytest.mark.parametrize(
    ("environ", "exporter"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "otlp"),
    ],
)
def test_spans_follow_the_sdk_variables(environ: dict[str, str], exporter: str | None) -> None:
    assert config_from_environment(environ).traces_exporter == exporter


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
         "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({"APIMCP_METRICS": "maybe"}, "APIMCP_METRICS"),
    ],
)  # fmt: skip
def test_what_cannot_be_followed_is_refused_by_name(environ: dict[str, str], named: str) -> None:
    with pytest.raises(TelemetryConfigError, match=named):
        config_from_environment(environ)


def test_metrics_are_on_when_asked_or_when_a_token_is_set() -> None:
    assert config_from_environment({}) == TelemetryConfig()
    assert Telemetry.from_environment({"APIMCP_METRICS": "off"}) is OFF  # what a server command installs
    assert config_from_environment({"APIMCP_METRICS": "on"}).metrics
    with_token = config_from_environment({"APIMCP_METRICS_TOKEN": "s3cr3t-scrape"})
    assert with_token.metrics and with_token.metrics_token == "s3cr3t-scrape"
    assert not config_from_environment({"APIMCP_METRICS": "off", "APIMCP_METRICS_TOKEN": "t"}).metrics
    assert "s3cr3t" not in repr(with_token)


@pytest.mark.anyio
async def test_off_nothing_is_instrumented() -> None:
    assert installed() is OFF
    async with gateway_for() as app:
        (route,) = app.runtime.routes.by_id.values()
        handler = route.endpoint.handler
        assert isinstance(handler, ExpositionHandler)
        assert handler.observer is None  # the engine's one attribute check, and nothing else
        entries = [e for e in handler.composition.exposed.values() if isinstance(e, OperationEntry)]
        assert entries and all(type(entry.member.backend) is RestBackend for entry in entries)
        assert not any(isinstance(entry.member.backend, InstrumentedBackend) for entry in entries)


def test_metrics_are_off_by_default(tmp_path: Path) -> None:
    assert installed() is OFF
    with live_echo_gateway(echo_config("{backend}", "expositions:\n  echo: {services: [echo]}\n"), tmp_path) as base:
        assert httpx2.get(f"{base}/metrics", timeout=10).status_code == 404
