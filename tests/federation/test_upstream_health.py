"""An MCP server that dies is reported by the gateway's /healthz (counts only), its tools answer a clear tool
error, and the exposition's other tools keep answering."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp import Client

from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.metrics import Metrics
from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app
from tests.support.upstream_mcp import old_sdk_upstream, showcase_upstream
from tests.telemetry.test_metrics import scrape, value

pytestmark = pytest.mark.anyio


async def test_a_killed_upstream_is_reported_and_the_other_tools_keep_answering(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        steady = stack.enter_context(showcase_upstream(session_era=True))
        doomed = contextlib.ExitStack()
        fragile_url = doomed.enter_context(old_sdk_upstream("1"))
        config = f"""
services:
  steady:
    mcp: {steady.url}
    include: [echo]
  fragile:
    mcp: {fragile_url}
    timeout: 3
expositions:
  both:
    services: [steady, fragile]
server: {{fetch_allow: [127.0.0.1]}}
"""
        install(Telemetry(metrics=Metrics()))
        stack.callback(install, OFF)
        base = stack.enter_context(live_app(lambda: gateway_of(config, tmp_path)))
        assert httpx2.get(f"{base}/healthz").json()["upstreams"] == {"unknown": 2}
        async with Client(f"{base}/mcp/both", mode="2026-07-28") as client:
            assert not (await client.call_tool("add", {"a": 1, "b": 1})).is_error
            assert httpx2.get(f"{base}/healthz").json()["upstreams"] == {"up": 1, "unknown": 1}
            doomed.close()  # the fragile server dies
            failed = await client.call_tool("add", {"a": 1, "b": 1})
            assert failed.is_error
            message = failed.content[0]
            assert isinstance(message, types.TextContent) and "connection" in message.text.lower()
            echoed = (await client.call_tool("echo", {"text": "still here"})).content[0]
            assert isinstance(echoed, types.TextContent) and echoed.text == "still here"
        assert httpx2.get(f"{base}/healthz").json()["upstreams"] == {"up": 1, "failing": 1}
        samples, _ = scrape(base)
        assert [value(samples, "apimcp_upstreams", state=state) for state in ("up", "failing", "unknown")] == [1, 1, 0]
