"""The 2024-11-05 HTTP+SSE transport, driven by the official client's SSE transport: the stream names the
POST endpoint, answers (and the server's own requests) arrive on the stream, the session is the engine's."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.sse import sse_client

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(sessions=MemorySessionStore(), client_request_timeout=10))
    with live_server(endpoint, endpoint.shutdown) as url:
        yield f"{url}/mcp"


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "old client"})


def test_an_http_sse_client_lists_calls_and_answers_the_server(base: str) -> None:
    async def run() -> tuple[str, str, str, str]:
        async with Client(sse_client(f"{base}/sse"), mode="legacy", elicitation_callback=_elicit) as client:
            listed = await client.list_tools()
            echoed = await client.call_tool("echo", {"text": "over HTTP+SSE"})
            asked = await client.call_tool("elicit")
            return client.protocol_version or "", listed.tools[0].name, echoed.content[0].text, asked.content[0].text  # type: ignore[union-attr]

    version, first, echoed, asked = anyio.run(run)
    assert version and first == "echo"
    assert echoed == "over HTTP+SSE" and asked == "Hello, old client!"


def test_posts_need_the_stream_s_session(base: str) -> None:
    unknown = httpx2.post(f"{base}/messages?sessionId=nope", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert unknown.status_code == 404 and "sessionId" in unknown.json()["error"]
    with httpx2.stream("GET", f"{base}/sse", timeout=10) as stream:
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        endpoint = next(lines).removeprefix("data: ")
        assert endpoint.startswith("/mcp/messages?sessionId=")


def test_the_stream_and_the_posts_are_refused_a_foreign_origin_or_host(base: str) -> None:
    """The finding: the transport was served before the endpoint's checks, so a page of any origin could open a
    stream and post to it (2024-11-05: servers MUST validate the Origin header on all incoming connections)."""
    evil = {"Origin": "http://evil.example"}
    assert httpx2.get(f"{base}/sse", headers=evil, timeout=10).status_code == 403
    assert httpx2.get(f"{base}/sse", headers={"Host": "evil.example"}, timeout=10).status_code == 421
    with httpx2.stream("GET", f"{base}/sse", timeout=10) as stream:
        lines = stream.iter_lines()
        assert next(lines) == "event: endpoint"
        endpoint = next(lines).removeprefix("data: ")
        posted = httpx2.post(
            base.removesuffix("/mcp") + endpoint, headers=evil, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )
        assert posted.status_code == 403 and posted.json()["error"]["message"] == "Origin not allowed"
