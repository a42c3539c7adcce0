"""An MCP server's prompts, resources and resource templates served by the gateway, beside its tools and an
exposition's own artifacts, read through the server in both client eras."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp, sse_messages
from tests.support.upstream_mcp import showcase_upstream

pytestmark = pytest.mark.anyio
PROMPTS_FILE = """
apiVersion: reshapr.io/v1alpha1
kind: Prompts
service: {name: own, version: "1"}
prompts:
  greet:
    description: The exposition's own greeting, which wins over the server's
    result: "Hello from the artifact"
  summarize:
    description: Summarize a text
    result: "Summarize this"
"""


@pytest.fixture(scope="module", params=["session upstream", "stateless upstream"])
def gateway_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder: Path = tmp_path_factory.mktemp("offerings")
    (folder / "prompts.yaml").write_text(PROMPTS_FILE)
    with showcase_upstream(session_era=request.param == "session upstream") as upstream:
        config = f"""
services:
  showcase:
    mcp: {upstream.url}
    include: [echo]
  own:
    mcp: {upstream.url}
    name: own
    version: "1"
    tool_prefix: own_
    include: [own_echo]
    artifacts: [prompts.yaml]
expositions:
  plain:
    services: [showcase]
  mixed:
    services: [own, showcase]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield base


@pytest.fixture(params=["legacy", "2026-07-28"])
async def client(gateway_url: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(f"{gateway_url}/mcp/plain", mode=request.param) as connected:
        yield connected


async def test_the_servers_prompts_resources_and_templates_are_listed(client: Client) -> None:
    prompts = (await client.list_prompts()).prompts
    assert [(p.name, p.title) for p in prompts] == [("greet", "Greeting")]
    assert prompts[0].arguments is not None and prompts[0].arguments[0].required is True
    resources = {str(r.uri): r for r in (await client.list_resources()).resources}
    assert set(resources) == {"test://text", "test://blob"} and resources["test://text"].mime_type == "text/plain"
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["test://items/{id}"]


async def test_a_prompt_is_got_from_the_server(client: Client) -> None:
    got = await client.get_prompt("greet", {"who": "Ada"})
    assert got.description == "A greeting"
    first = got.messages[0].content
    assert isinstance(first, types.TextContent) and first.text == "Say hello to Ada"
    with pytest.raises(MCPError, match="could not give the prompt greet"):
        await client.get_prompt("greet", {})  # the server says what is missing


async def test_resources_are_read_from_the_server_listed_or_by_template(client: Client) -> None:
    text = (await client.read_resource("test://text")).contents[0]
    assert isinstance(text, types.TextResourceContents) and text.text == "hello"
    blob = (await client.read_resource("test://blob")).contents[0]
    assert isinstance(blob, types.BlobResourceContents) and blob.mime_type == "image/png"
    item = (await client.read_resource("test://items/42")).contents[0]
    assert isinstance(item, types.TextResourceContents) and item.text == "item 42"
    with pytest.raises(MCPError, match="Resource not found"):
        await client.read_resource("other://nothing")


async def test_an_expositions_own_prompts_win_and_the_servers_complete_them(gateway_url: str) -> None:
    async with Client(f"{gateway_url}/mcp/mixed", mode="2026-07-28") as client:
        prompts = {p.name: p.description for p in (await client.list_prompts()).prompts}
        assert prompts == {
            "greet": "The exposition's own greeting, which wins over the server's",
            "summarize": "Summarize a text",
        }
        got = (await client.get_prompt("greet", {})).messages[0].content
        assert isinstance(got, types.TextContent) and got.text == "Hello from the artifact"
        # two members front the same server: its resources are listed once
        assert len((await client.list_resources()).resources) == 2


@pytest.mark.parametrize("session_era", [True, False], ids=["session-era upstream", "2026-07-28 upstream"])
def test_an_update_of_a_subscribed_resource_reaches_the_subscribed_client(tmp_path: Path, session_era: bool) -> None:
    """The gateway subscribes once for its clients: on its session with a session-era server, or on the
    subscriptions/listen stream it holds with a 2026-07-28 one."""
    with showcase_upstream(session_era=session_era) as upstream:
        config = f"""
services:
  showcase:
    mcp: {upstream.url}
    include: [notify_changes]
server: {{fetch_allow: [127.0.0.1]}}
"""
        with live_app(lambda: gateway_of(config, tmp_path)) as base, McpHttp(f"{base}/mcp/showcase") as mcp:
            session = mcp.initialize()
            assert session.request("resources/subscribe", {"uri": "test://text"}).result == {}
            headers = {"accept": "text/event-stream", **session.headers()}
            with httpx2.Client(timeout=10) as listener, listener.stream("GET", mcp.url, headers=headers) as stream:
                assert stream.status_code == 200
                # the server says its resource changed (to the gateway's session with it, which subscribed)
                assert session.request("tools/call", {"name": "notify_changes"}).status == 200
                updates = (m for m in sse_messages(stream.iter_lines()) if m["method"].endswith("/updated"))
                assert next(updates) == {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "test://text"},
                }
