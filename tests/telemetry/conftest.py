"""A gateway as it really runs (uvicorn, real backends of every kind) with telemetry on: spans exported over
OTLP/HTTP to a receiver the test starts, metrics at /metrics."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.environment import resource_from
from apimcp.telemetry.export import BatchSettings, OtlpSettings
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.tracing import otlp_tracing
from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway
from tests.support.graphql_server import SDL, graphql_server
from tests.support.grpc_server import PROTOS, SHOP_PROTO, running_server
from tests.support.mcp_http import McpHttp
from tests.telemetry.otlp_receiver import Receiver, otlp_receiver

CLIENT_TOKEN = "Bearer a-client-token-for-the-gateway"
SECRET_ARGUMENT = "secret-argument-value-7f3a"


ECHO_FILES = """apiVersion: reshapr.io/v1alpha1
kind: Resources
service: {name: Echo API, version: "2.1"}
resources:
  file:///echo?of=resource: {name: echoed, mimeType: application/json}
"""
"""A resource the echo backend serves: reading it is a backend call."""


@dataclass
class Traced:
    base: str
    receiver: Receiver
    telemetry: Telemetry


def new_traceparent() -> tuple[str, str, str]:
    """(traceparent, trace id, parent span id) of a fresh trace, as a client would send it."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traced]:
    folder = tmp_path_factory.mktemp("telemetry")
    (folder / "library.graphql").write_text(SDL)
    (folder / "echo-files.yaml").write_text(ECHO_FILES)
    with otlp_receiver() as receiver:
        settings = OtlpSettings(endpoint=f"{receiver.url}/v1/traces")
        tracing = otlp_tracing(settings, resource_from({}), BatchSettings(schedule_delay=0.05))  # every 50 ms
        telemetry = Telemetry(tracing=tracing, metrics=Metrics())
        install(telemetry)
        try:
            with graphql_server() as library, running_server() as shop:
                config = f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    backend: "{{backend}}"
    header_policy: {{allow: [x-tenant]}}
    artifacts: [echo-files.yaml]
  library:
    graphql: library.graphql
    name: library
    version: "1"
    backend: {library}
  shop:
    grpc: {PROTOS / SHOP_PROTO}
    include_paths: [{PROTOS}]
    backend: {shop.address}
expositions:
  echo: {{services: [echo], audit: true}}
  library: {{services: [library]}}
  shop: {{services: [shop]}}
"""
                with live_echo_gateway(config, folder) as base:
                    yield Traced(base, receiver, telemetry)
        finally:
            install(OFF)
            tracing.shutdown()


def call_tool(
    url: str, tool: str, arguments: dict[str, Any], *, modern: bool = True, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """The JSON-RPC answer to `tools/call` (modern: one 2026-07-28 request; else a session's)."""
    sent = {"authorization": CLIENT_TOKEN, **(headers or {})}
    with McpHttp(url) as mcp:
        if modern:
            reply = mcp.modern("tools/call", {"name": tool, "arguments": arguments}, headers=sent)
        else:
            reply = mcp.initialize().request("tools/call", {"name": tool, "arguments": arguments}, sent)
    return dict(reply.body)
