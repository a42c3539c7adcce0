"""MCP servers built with old releases of the official Python SDK (1.8.1 speaks 2024-11-05, 1.10.1 2025-06-18,
the last 1.x 2025-11-25), which this project did not write, fronted by the gateway for clients of both eras,
over Streamable HTTP and the 2024-11-05 HTTP+SSE transport."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client

from apimcp.backends.rest import close_session, new_session
from apimcp.federation.backend import McpBackend
from apimcp.federation.listing import import_upstream
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import Fetcher
from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import old_sdk_upstream

pytestmark = pytest.mark.anyio


@pytest.fixture(
    scope="module",
    params=[
        ("1.8.1", "streamable-http"),
        ("1.10.1", "streamable-http"),
        ("1", "streamable-http"),
        ("1.8.1", "sse"),  # the 2024-11-05 HTTP+SSE transport
        ("1", "sse"),
    ],
    ids="-".join,
)
def gateway_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with old_sdk_upstream(*request.param) as upstream:
        config = f"""
services:
  old:
    mcp: {upstream}
    timeout: 10
server: {{fetch_allow: [127.0.0.1]}}
"""
        folder: Path = tmp_path_factory.mktemp("old-sdk")
        with live_app(lambda: gateway_of(config, folder)) as base:
            yield f"{base}/mcp/old"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_old_sdk_servers_tools_prompts_and_resources_reach_each_client(gateway_url: str, mode: str) -> None:
    heard: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(progress)

    async with Client(gateway_url, mode=mode) as client:  # type: ignore[arg-type]
        assert {tool.name for tool in (await client.list_tools()).tools} == {"add", "count_slowly", "wait"}
        added = (await client.call_tool("add", {"a": 2, "b": 3})).content[0]
        assert isinstance(added, types.TextContent) and added.text == "5"
        counted = await client.call_tool("count_slowly", {"upto": 2}, progress_callback=on_progress)
        assert not counted.is_error
        greeting = (await client.get_prompt("greet", {"who": "Ada"})).messages[0].content
        assert isinstance(greeting, types.TextContent) and greeting.text == "Say hello to Ada"
        note = (await client.read_resource("notes://first")).contents[0]
        assert isinstance(note, types.TextResourceContents) and note.text == "remember the milk"
    assert heard == [1.0, 2.0]


@pytest.mark.parametrize("transport", ["sse", "streamable-http"])
async def test_a_call_the_gateway_gives_up_is_cancelled_on_an_old_server(transport: str, tmp_path: Path) -> None:
    """The gateway's side of a cancellation (the client's side is the engine's: tests/protocol): the backend's
    call cancelled once the server has started, the server's tool is cancelled. Over Streamable HTTP by
    `notifications/cancelled` on the session, over HTTP+SSE by the same on the session's endpoint."""
    mark = tmp_path / "mark"
    with old_sdk_upstream("1", transport, mark) as upstream:
        service = import_upstream(upstream, fetcher=Fetcher(AddressPolicy.allowing(["127.0.0.1"])))
        http = new_session()
        backend = McpBackend(service, http, timeout_seconds=30)
        try:
            started = asyncio.Event()

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                started.set()

            call = asyncio.create_task(
                backend.call(service.operation("wait") or service.operations[0], {}, on_progress)
            )
            with anyio.fail_after(15):  # guards far above what it takes
                await started.wait()
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                while not mark.exists():  # noqa: ASYNC110 - written by the server's process
                    await anyio.sleep(0.05)
        finally:
            await backend.close()
            await close_session(http)
    assert mark.read_text() == "cancelled"
