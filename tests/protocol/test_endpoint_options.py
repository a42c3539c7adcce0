"""Endpoint settings: session expiry, one-era endpoints, stream shutdown, shared requestState keys."""

from __future__ import annotations

import httpx2
import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore, RequestStateSealer
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import McpHttp, sse_messages


def test_idle_sessions_expire_to_404() -> None:
    now = [1000.0]
    store = MemorySessionStore(idle_timeout=60, clock=lambda: now[0])
    endpoint = McpEndpoint(Showcase(), EndpointOptions(sessions=store))
    with live_server(endpoint) as base, McpHttp(f"{base}/mcp") as mcp:
        session = mcp.initialize()
        assert session.request("ping").status == 200
        now[0] += 61  # a minute idle, on the store's clock
        assert session.request("ping").status == 404


def test_sessions_belong_to_their_endpoint() -> None:
    store = MemorySessionStore()
    first = McpEndpoint(Showcase(), EndpointOptions(sessions=store), endpoint_id="first")
    second = McpEndpoint(Showcase(), EndpointOptions(sessions=store), endpoint_id="second")
    with (
        live_server(first) as base_one,
        live_server(second) as base_two,
        McpHttp(f"{base_one}/mcp") as one,
        McpHttp(f"{base_two}/mcp") as two,
    ):
        session = one.initialize()
        assert two.request("ping", None, session.headers()).status == 404


def test_stateless_only_endpoint() -> None:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(session_era=False))
    with live_server(endpoint) as base, McpHttp(f"{base}/mcp") as mcp:
        refused = mcp.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        assert refused.status == 400 and "2026-07-28" in refused.error["message"]
        assert mcp.modern("tools/list").status == 200
        assert mcp.http.get(mcp.url).status_code == 405


def test_session_only_endpoint() -> None:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(stateless_era=False))
    with live_server(endpoint) as base, McpHttp(f"{base}/mcp") as mcp:
        assert mcp.modern("tools/list").status == 400
        assert mcp.initialize().request("ping").status == 200


def test_an_endpoint_serves_at_least_one_era() -> None:
    with pytest.raises(ValueError, match="at least one era"):
        EndpointOptions(session_era=False, stateless_era=False)


def test_shutdown_ends_get_streams() -> None:
    endpoint = McpEndpoint(Showcase())
    with live_server(endpoint, endpoint.shutdown) as base, McpHttp(f"{base}/mcp") as mcp:
        session = mcp.initialize()
        headers = {"accept": "text/event-stream", **session.headers()}
        with httpx2.Client(timeout=5) as client, client.stream("GET", mcp.url, headers=headers) as stream:
            assert stream.status_code == 200
            endpoint.shutdown()
            assert list(sse_messages(stream.iter_lines())) == []  # the stream ends, cleanly


def test_replicas_sharing_a_key_continue_each_others_round_trips() -> None:
    key = [b"shared-key-of-the-deployment-0001"]
    one = McpEndpoint(Showcase(), EndpointOptions(request_state=RequestStateSealer(key)))
    two = McpEndpoint(Showcase(), EndpointOptions(request_state=RequestStateSealer(key)))
    stranger = McpEndpoint(Showcase())
    with (
        live_server(one) as a,
        live_server(two) as b,
        live_server(stranger) as c,
        McpHttp(f"{a}/mcp") as on_one,
        McpHttp(f"{b}/mcp") as on_two,
        McpHttp(f"{c}/mcp") as on_stranger,
    ):
        first = on_one.modern("tools/call", {"name": "elicit"}, capabilities={"elicitation": {}}).result
        (k,) = first["inputRequests"]
        retry = {
            "name": "elicit",
            "inputResponses": {k: {"action": "accept", "content": {"name": "Lin"}}},
            "requestState": first["requestState"],
        }
        done = on_two.modern("tools/call", retry, capabilities={"elicitation": {}})
        assert done.result["content"][0]["text"] == "Hello, Lin!"
        refused = on_stranger.modern("tools/call", retry, capabilities={"elicitation": {}})
        assert refused.error["code"] == -32602


def test_a_request_state_is_good_on_its_own_endpoint_only() -> None:
    """The finding: two expositions of one gateway share the sealer's keys, and a state sealed by one (its answers
    and the handler's state) was taken by the other."""
    key = [b"shared-key-of-the-deployment-0001"]
    sealer = RequestStateSealer(key)
    x = McpEndpoint(Showcase(), EndpointOptions(request_state=sealer), endpoint_id="org-a/x")
    y = McpEndpoint(Showcase(), EndpointOptions(request_state=sealer), endpoint_id="org-b/y")
    with live_server(x) as a, live_server(y) as b, McpHttp(f"{a}/mcp") as on_x, McpHttp(f"{b}/mcp") as on_y:
        first = on_x.modern("tools/call", {"name": "elicit"}, capabilities={"elicitation": {}}).result
        (k,) = first["inputRequests"]
        retry = {
            "name": "elicit",
            "inputResponses": {k: {"action": "accept", "content": {"name": "Lin"}}},
            "requestState": first["requestState"],
        }
        refused = on_y.modern("tools/call", retry, capabilities={"elicitation": {}})
        assert refused.error["code"] == -32602 and "different request" in refused.error["message"]
        done = on_x.modern("tools/call", retry, capabilities={"elicitation": {}})
        assert done.result["content"][0]["text"] == "Hello, Lin!"


@pytest.mark.anyio
async def test_lifespan_shutdown_ends_streams() -> None:
    endpoint = McpEndpoint(Showcase())
    ended: list[str] = []
    endpoint.shutdown = lambda: ended.append("shutdown")  # type: ignore[method-assign]
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return next(incoming)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await endpoint({"type": "lifespan"}, receive, send)  # type: ignore[arg-type]
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert ended == ["shutdown"]
