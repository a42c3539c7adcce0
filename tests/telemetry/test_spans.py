"""Spans as an OTLP/HTTP receiver really receives them: a SERVER span per MCP request continuing the client's
trace, a CLIENT span per backend call (REST, GraphQL, gRPC) as its child, and the backend given that span's
`traceparent`."""

from __future__ import annotations

import json

import pytest

from tests.support.mcp_http import McpHttp
from tests.telemetry.conftest import CLIENT_TOKEN, SECRET_ARGUMENT, Traced, call_tool, new_traceparent
from tests.telemetry.otlp_receiver import ReceivedSpan


def of_trace(traced: Traced, trace_id: str, count: int) -> list[ReceivedSpan]:
    spans = traced.receiver.wait_for(lambda spans: sum(s.trace_id == trace_id for s in spans) >= count)
    return [span for span in spans if span.trace_id == trace_id]


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "session"])
def test_a_tool_call_is_a_server_span_continuing_the_client_trace_with_the_rest_call_as_its_child(
    traced: Traced, modern: bool
) -> None:
    traceparent, trace_id, client_parent = new_traceparent()
    body = call_tool(f"{traced.base}/mcp/echo", "get_item", {"itemId": SECRET_ARGUMENT}, modern=modern,
                     headers={"traceparent": traceparent, "tracestate": "congo=t61rcWkgMzE"})  # fmt: skip
    echoed = {k.lower(): v for k, v in body["result"]["structuredContent"]["headers"].items()}

    spans = of_trace(traced, trace_id, 2)
    (server,) = [s for s in spans if s.is_server]
    (client,) = [s for s in spans if s.is_client]
    assert server.parent_span_id == client_parent  # the client's trace, continued
    assert server.name == "tools/call get_item"
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.tool.name"] == "get_item"
    assert server.attributes["apimcp.exposition"] == "default/echo"
    assert server.attributes["apimcp.outcome"] == "success"
    assert server.attributes["mcp.protocol.version"] == ("2026-07-28" if modern else "2025-11-25")
    assert server.attributes["apimcp.snapshot.revision"] >= 0
    assert not server.failed
    assert server.service_name == "apimcp"

    assert client.parent_span_id == server.span_id
    assert client.name == "GET /items/{itemId}"
    assert client.attributes["apimcp.backend.kind"] == "rest"
    assert client.attributes["http.response.status_code"] == 200
    # the backend is told the gateway's CLIENT span is the parent, in the client's trace, with its tracestate
    assert echoed["traceparent"] == f"00-{trace_id}-{client.span_id}-01"
    assert echoed["tracestate"] == "congo=t61rcWkgMzE"
    everything = json.dumps([s.attributes for s in spans]) + json.dumps([s.name for s in spans])
    assert SECRET_ARGUMENT not in everything
    assert CLIENT_TOKEN.split()[1] not in everything


def test_without_a_client_traceparent_the_request_starts_a_trace(traced: Traced) -> None:
    body = call_tool(f"{traced.base}/mcp/echo", "get_item", {"itemId": "1"})
    echoed = {k.lower(): v for k, v in body["result"]["structuredContent"]["headers"].items()}
    _, trace_id, span_id, _ = echoed["traceparent"].split("-")
    spans = of_trace(traced, trace_id, 2)
    (server,) = [s for s in spans if s.is_server]
    (client,) = [s for s in spans if s.is_client]
    assert server.parent_span_id == ""
    assert client.span_id == span_id and client.parent_span_id == server.span_id


def test_graphql_and_grpc_calls_are_client_spans_whose_context_the_backend_receives(traced: Traced) -> None:
    traceparent, trace_id, _ = new_traceparent()
    graphql = call_tool(f"{traced.base}/mcp/library", "passedHeaders", {}, headers={"traceparent": traceparent})
    passed = graphql["result"]["structuredContent"]["passedHeaders"]
    grpc = call_tool(f"{traced.base}/mcp/shop", "WhoAmI", {}, headers={"traceparent": traceparent})
    metadata = grpc["result"]["structuredContent"]["metadata"]

    spans = of_trace(traced, trace_id, 4)
    servers = {s.attributes["apimcp.exposition"]: s for s in spans if s.is_server}
    clients = {s.attributes["apimcp.backend.kind"]: s for s in spans if s.is_client}
    assert set(servers) == {"default/library", "default/shop"}
    assert set(clients) == {"graphql", "grpc"}
    assert clients["graphql"].parent_span_id == servers["default/library"].span_id
    assert clients["grpc"].parent_span_id == servers["default/shop"].span_id
    assert clients["graphql"].name == "query passedHeaders"
    assert clients["grpc"].attributes["rpc.system"] == "grpc"
    assert clients["grpc"].name == f"{clients['grpc'].attributes['rpc.service']}/WhoAmI"
    assert passed["traceparent"] == f"00-{trace_id}-{clients['graphql'].span_id}-01"
    assert metadata["traceparent"] == f"00-{trace_id}-{clients['grpc'].span_id}-01"


def test_a_resource_read_from_the_backend_is_a_client_span_whose_context_the_backend_receives(traced: Traced) -> None:
    """Finding: a `file://` read used the member's raw backend, with no CLIENT span, latency figure or trace
    context (nor the member's header policy)."""
    traceparent, trace_id, _ = new_traceparent()
    with McpHttp(f"{traced.base}/mcp/echo") as mcp:
        read = mcp.modern("resources/read", {"uri": "file:///echo?of=resource"},
                          headers={"traceparent": traceparent, "x-tenant": "acme"})  # fmt: skip
    (contents,) = read.result["contents"]
    echoed = json.loads(contents["text"])
    headers = {k.lower(): v for k, v in echoed["headers"].items()}

    spans = of_trace(traced, trace_id, 2)  # before the fix: the SERVER span alone
    (server,) = [s for s in spans if s.is_server]
    (client,) = [s for s in spans if s.is_client]
    assert server.name == "resources/read file:///echo"
    assert client.parent_span_id == server.span_id
    assert client.name == "GET /echo"  # the query stays out, as it does of the SERVER span's name
    assert client.attributes["apimcp.backend.kind"] == "rest"
    assert client.attributes["http.response.status_code"] == 200
    assert headers["traceparent"] == f"00-{trace_id}-{client.span_id}-01"
    assert headers["x-tenant"] == "acme"
    assert echoed["query"] == "of=resource"


def test_an_unknown_tool_is_an_error_span_not_named_after_what_the_client_made_up(traced: Traced) -> None:
    traceparent, trace_id, _ = new_traceparent()
    body = call_tool(f"{traced.base}/mcp/echo", "made_up_tool_name", {}, headers={"traceparent": traceparent})
    assert body["error"]["code"] == -32602

    (server,) = of_trace(traced, trace_id, 1)
    assert server.is_server and server.failed
    assert server.name == "tools/call"
    assert server.attributes["apimcp.outcome"] == "error"
    assert server.attributes["rpc.jsonrpc.error_code"] == -32602
    assert server.attributes["error.type"] == "-32602"


def test_a_backend_failure_fails_both_spans(traced: Traced) -> None:
    traceparent, trace_id, _ = new_traceparent()
    body = call_tool(f"{traced.base}/mcp/echo", "get_status", {"code": 503}, headers={"traceparent": traceparent})
    assert body["result"]["isError"] is True

    spans = of_trace(traced, trace_id, 2)
    (server,) = [s for s in spans if s.is_server]
    (client,) = [s for s in spans if s.is_client]
    assert server.failed and server.attributes["apimcp.outcome"] == "tool_error"
    assert client.failed and client.attributes["error.type"] == "503"


def test_a_list_request_is_a_server_span_without_backend_calls(traced: Traced) -> None:
    traceparent, trace_id, _ = new_traceparent()
    with McpHttp(f"{traced.base}/mcp/echo") as mcp:
        mcp.modern("tools/list", {}, headers={"traceparent": traceparent})
    (server,) = of_trace(traced, trace_id, 1)
    assert server.name == "tools/list" and "apimcp.target" not in server.attributes


def test_a_trace_the_client_did_not_sample_is_not_recorded_but_still_reaches_the_backend(traced: Traced) -> None:
    _, trace_id, client_parent = new_traceparent()
    unsampled = f"00-{trace_id}-{client_parent}-00"
    body = call_tool(f"{traced.base}/mcp/echo", "get_item", {"itemId": "1"}, headers={"traceparent": unsampled})
    echoed = {k.lower(): v for k, v in body["result"]["structuredContent"]["headers"].items()}
    version, passed_trace, passed_parent, flags = echoed["traceparent"].split("-")
    assert (version, passed_trace, flags) == ("00", trace_id, "00")
    assert passed_parent != client_parent  # the gateway's (unrecorded) span is the backend's parent
    # a sampled request made after it is exported; by then nothing of the unsampled trace was
    marker, marker_trace, _ = new_traceparent()
    call_tool(f"{traced.base}/mcp/echo", "get_item", {"itemId": "2"}, headers={"traceparent": marker})
    spans = of_trace(traced, marker_trace, 2)
    assert not [s for s in traced.receiver.spans if s.trace_id == trace_id]
    assert len(spans) == 2
