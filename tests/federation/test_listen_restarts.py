"""A 2026-07-28 server's subscriptions/listen stream is opened again when it ends, with pauses that grow, and given
up after a few failures in a row. The finding: a stream the server acknowledged and then closed at once counted as
a success, so a server that hangs up was asked again every 2 s for ever."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web

from apimcp.backends.rest import close_session, new_session
from apimcp.federation import era as eras
from apimcp.federation import subscription
from apimcp.federation.listener import ProgressRoutes
from apimcp.federation.subscription import UpstreamSubscription
from tests.support.live_aiohttp import serving_here

pytestmark = pytest.mark.anyio
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}}


async def test_a_stream_acknowledged_then_closed_at_once_counts_as_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscription, "FIRST_PAUSE_SECONDS", 0.01)
    opened: list[float] = []

    async def listen(request: web.Request) -> web.StreamResponse:
        opened.append(asyncio.get_running_loop().time())
        stream = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await stream.prepare(request)
        said = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {}}
        await stream.write(f"event: message\ndata: {json.dumps(said)}\n\n".encode())
        return stream  # and hangs up

    app = web.Application()
    app.router.add_post("/mcp", listen)
    answer = json.dumps({"jsonrpc": "2.0", "id": eras.DISCOVER_ID, "result": DISCOVERED}).encode()
    era = eras.stateless_era(200, "application/json", answer)
    assert era is not None
    http = new_session()
    try:
        async with serving_here(app) as port:
            listening = UpstreamSubscription(http, f"http://127.0.0.1:{port}/mcp", era, {}, ProgressRoutes(), True)
            listening.start()
            await asyncio.sleep(1.5)  # at the pauses' pace, dozens of streams if each counted as a success
            listening.stop()
    finally:
        await close_session(http)
    assert len(opened) == subscription.MAX_RESTARTS + 1
