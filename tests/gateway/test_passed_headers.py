"""What backends of every kind receive of the client's request: the plan's header policy, W3C trace context,
Forwarded and X-Forwarded-For, never the client's token or the MCP transport's headers; and the audit trail
a plan asks for, as the log really receives it."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway
from tests.support.graphql_server import SDL, graphql_server
from tests.support.grpc_server import PROTOS, SHOP_PROTO, running_server
from tests.support.mcp_http import McpHttp

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SENT = {
    "traceparent": TRACEPARENT,
    "tracestate": "congo=t61rcWkgMzE",
    "x-tenant": "acme",
    "x-secret-header": "never",
    "authorization": "Bearer a-client-token-for-the-gateway",
}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("passed")
    (folder / "library.graphql").write_text(SDL)
    with graphql_server() as library, running_server() as shop:
        config = f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    backend: "{{backend}}"
    header_policy: {{allow: [x-tenant], rename: {{x-tenant: X-Tenant-Id}}}}
  library:
    graphql: library.graphql
    name: library
    version: "1"
    backend: {library}
    header_policy: {{allow: [x-tenant]}}
  shop:
    grpc: {PROTOS / SHOP_PROTO}
    include_paths: [{PROTOS}]
    backend: {shop.address}
    header_policy: {{allow: [x-tenant]}}
expositions:
  echo: {{services: [echo], audit: true}}
  library: {{services: [library]}}
  shop: {{services: [shop]}}
"""

        with live_echo_gateway(config, folder) as base:
            yield base


def call(
    url: str, tool: str, arguments: dict[str, Any], modern: bool = True, extra: dict[str, str] | None = None
) -> dict[str, Any]:
    sent = {**SENT, **(extra or {})}
    with McpHttp(url) as mcp:
        if modern:
            reply = mcp.modern("tools/call", {"name": tool, "arguments": arguments}, headers=sent)
        else:
            session = mcp.initialize()
            reply = session.request("tools/call", {"name": tool, "arguments": arguments}, sent)
    result = reply.result
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "session"])
def test_a_rest_backend_receives_what_the_policy_passes_and_nothing_of_the_transport(
    gateway: str, modern: bool
) -> None:
    echoed = call(f"{gateway}/mcp/echo", "get_item", {"itemId": "1"}, modern)
    headers = {k.lower(): v for k, v in echoed["headers"].items()}
    assert headers["traceparent"] == TRACEPARENT
    assert headers["tracestate"] == "congo=t61rcWkgMzE"
    assert headers["x-tenant-id"] == "acme"
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["forwarded"].startswith("for=127.0.0.1;proto=http;host=127.0.0.1:")
    for never in ("authorization", "x-secret-header", "x-tenant", "mcp-session-id", "mcp-protocol-version",
                  "mcp-method", "mcp-name"):  # fmt: skip
        assert never not in headers, never


def test_a_graphql_backend_receives_trace_context_and_allowed_headers(gateway: str) -> None:
    passed = call(f"{gateway}/mcp/library", "passedHeaders", {})["passedHeaders"]
    assert passed["traceparent"] == TRACEPARENT
    assert passed["tenant"] == "acme"
    assert passed["forwardedFor"] == "127.0.0.1"


def test_a_grpc_backend_receives_them_as_metadata(gateway: str) -> None:
    metadata = call(f"{gateway}/mcp/shop", "WhoAmI", {}, extra={"grpc-timeout": "1n", "x-trace-bin": "AAA"})["metadata"]
    assert "grpc-timeout" not in metadata  # gRPC's own and binary metadata are never taken from a client
    assert "x-trace-bin" not in metadata
    assert metadata["traceparent"] == TRACEPARENT
    assert metadata["x-tenant"] == "acme"
    assert "authorization" not in metadata
    assert "x-secret-header" not in metadata


def test_the_audit_trail_logs_one_event_per_request_without_arguments_or_results(
    gateway: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    call(f"{gateway}/mcp/echo", "get_item", {"itemId": "secret-argument-value"})
    with McpHttp(f"{gateway}/mcp/echo") as mcp:
        mcp.modern("tools/call", {"name": "no_such_tool", "arguments": {}})
    # An event is written once its answer is sent: wait for the second; keep the last two (an earlier test's
    # last event may be written once this one has begun).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any("no_such_tool" in r.getMessage() for r in caplog.records):
        time.sleep(0.01)
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"][-2:]
    assert [(e["action"], e["target"], e["outcome"]) for e in events] == [
        ("tools/call", "get_item", "success"),
        ("tools/call", "no_such_tool", "error"),
    ]
    first = events[0]
    assert first["exposition"] == "echo"
    assert first["organization"] == "default"
    assert first["client"] == "127.0.0.1"
    assert first["duration_ms"] > 0
    assert events[1]["error_code"] == -32602
    assert "secret-argument-value" not in json.dumps(events)
    assert "a-client-token" not in json.dumps(events)
