"""Era bridging: every client era served from upstreams of every session revision and from a stateless one.

An upstream of one revision is the project's engine behind a wrapper that offers it nothing else: whatever
revision the gateway's initialize asks for, the engine sees (and so answers) that one. The gateway then speaks
it: no `MCP-Protocol-Version` header before 2025-06-18, the header after, the `_meta` envelope to a stateless
one. Each client era is the official client's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp import Client
from starlette.types import Message, Receive, Scope, Send

from apimcp.protocol import EndpointOptions, McpEndpoint
from tests.gateway.conftest import gateway_of
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_app, live_server, whole_body
from tests.support.mcp_http import McpHttp

pytestmark = pytest.mark.anyio
SESSION_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
CLIENT_MODES = ["legacy", "2026-07-28"]


class OneRevision:
    """An endpoint that speaks `revision` only: an initialize's offer is replaced by it, and every request is
    recorded (its MCP-Protocol-Version header, if any), so that the test sees what the gateway sent."""

    def __init__(self, endpoint: McpEndpoint, revision: str) -> None:
        self._endpoint = endpoint
        self._revision = revision
        self.version_headers: set[str | None] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._endpoint(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"mcp-protocol-version")
        self.version_headers.add(header.decode() if header is not None else None)
        body = await whole_body(receive)
        parsed: Any = orjson.loads(body) if body else None
        if isinstance(parsed, dict) and parsed.get("method") == "initialize":
            parsed["params"]["protocolVersion"] = self._revision
            body = orjson.dumps(parsed)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self._endpoint(scope, replay, send)


@pytest.fixture(scope="module", params=[*SESSION_REVISIONS, "2026-07-28"])
def bridged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    revision: str = request.param
    stateless = revision == "2026-07-28"
    endpoint = McpEndpoint(Showcase(), EndpointOptions(session_era=not stateless, stateless_era=stateless))
    upstream = OneRevision(endpoint, revision)
    with live_server(upstream, endpoint.shutdown) as base:
        config = f"""
services:
  showcase:
    mcp: {base.replace("//localhost:", "//127.0.0.1:")}/mcp
    include: [echo, progress, structured_object, image]
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("bridged")
        with live_app(lambda: gateway_of(config, folder)) as gateway:
            yield f"{gateway}/mcp/showcase", (revision, upstream)


@pytest.mark.parametrize("mode", CLIENT_MODES)
async def test_a_client_of_each_era_is_served_from_an_upstream_of_each_revision(
    bridged: tuple[str, Any], mode: str
) -> None:
    url, (revision, upstream) = bridged
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    async with Client(url, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"echo", "progress", "structured_object", "image"}
        echoed = await client.call_tool("echo", {"text": f"from {revision}"})
        assert echoed.content[0].text == f"from {revision}"  # type: ignore[union-attr]
        assert not (await client.call_tool("progress", {}, progress_callback=on_progress)).is_error
        structured = await client.call_tool("structured_object", {})
        image = await client.call_tool("image", {})
    assert heard == [0.0, 50.0, 100.0]
    assert image.content[0].type == "image"
    if revision >= "2025-06-18":  # structured content exists from 2025-06-18 on, upstream and downstream alike
        assert structured.structured_content == {"n": 1}
    else:
        assert structured.structured_content is None and structured.content[0].text == '{"n": 1}'  # type: ignore[union-attr]
    # a session-era upstream is first asked server/discover (refused), then initialize (no header), then
    # every request carries the header from 2025-06-18 on; a stateless one gets 2026-07-28 on every request
    expected = {"2026-07-28"} if revision == "2026-07-28" else {"2026-07-28", None}
    if "2025-06-18" <= revision < "2026-07-28":
        expected.add(revision)
    assert upstream.version_headers == expected


@pytest.mark.parametrize("client_revision", SESSION_REVISIONS)
def test_a_raw_client_of_each_session_revision_is_served_from_each_upstream(
    bridged: tuple[str, Any], client_revision: str
) -> None:
    url, (revision, _) = bridged
    with McpHttp(url) as mcp:
        session = mcp.initialize(client_revision)
        assert session.request("tools/list").result["tools"]
        echoed = session.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}).result
        assert echoed["content"] == [{"type": "text", "text": "hi"}]
        structured = session.request("tools/call", {"name": "structured_object", "arguments": {}}).result
    both_have_it = min(revision, client_revision) >= "2025-06-18"
    assert ("structuredContent" in structured) is both_have_it
