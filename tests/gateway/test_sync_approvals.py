"""A gateway asks the control plane it follows over HTTP where a call's approval by an administrator stands
(`POST /api/v1/gateway/approvals` with its token); whatever goes wrong on the way is `AdminUnavailable` with a
reason, never a hang or an unbounded read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from apimcp.gateway.sync import HttpSource
from apimcp.policies.admin_approval import AdminUnavailable
from apimcp.sealing.keys import GatewayKey
from tests.support.live_aiohttp import live_aiohttp

pytestmark = pytest.mark.anyio

REQUEST = {"exposition": "exp_1", "tool": "delete_book", "digest": "ab" * 12, "caller": "alice",
           "question": "Approve delete_book?", "lifetime": 60.0}  # fmt: skip
seen: list[tuple[str | None, Any]] = []


def control_plane() -> web.Application:
    async def approvals(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((request.headers.get("Authorization"), body))
        tool = body["tool"]
        if tool == "broken":
            return web.json_response({"detail": "the exposition is not this organization's"}, status=404)
        if tool == "huge":
            return web.Response(body=b'{"x": "' + b"y" * 100_000 + b'"}', content_type="application/json")
        if tool == "list":
            return web.json_response([1, 2])
        if tool == "garbage":
            return web.Response(body=b"not json", content_type="application/json")
        return web.json_response({"id": "apr_1", "status": "pending", "expires_in": 60.0})

    app = web.Application()
    app.router.add_post("/api/v1/gateway/approvals", approvals)
    return app


@pytest.fixture(scope="module")
def plane() -> Iterator[str]:
    with live_aiohttp(control_plane) as base:
        yield base


async def test_the_gateway_token_asks_and_the_answer_comes_back(plane: str) -> None:
    async with aiohttp.ClientSession() as session:
        source = HttpSource(session, plane, "gw-token", "edge", GatewayKey.generate().public)
        assert await source.request_approval(REQUEST) == {"id": "apr_1", "status": "pending", "expires_in": 60.0}
    assert seen[-1] == ("Bearer gw-token", REQUEST)


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        ("broken", "the control plane answered HTTP 404: the exposition is not this organization's"),
        ("huge", "the control plane's answer is longer than 65536 bytes"),
        ("list", "the control plane's answer is not an object"),
        ("garbage", "the control plane did not answer (JSONDecodeError)"),
    ],
)
async def test_an_answer_that_says_nothing_usable_is_unavailable(plane: str, tool: str, reason: str) -> None:
    async with aiohttp.ClientSession() as session:
        source = HttpSource(session, plane, "gw-token", "edge", GatewayKey.generate().public)
        with pytest.raises(AdminUnavailable) as caught:
            await source.request_approval({**REQUEST, "tool": tool})
    assert str(caught.value) == reason


async def test_a_control_plane_that_is_not_there_is_unavailable() -> None:
    async with aiohttp.ClientSession() as session:
        source = HttpSource(session, "http://127.0.0.1:9", "gw-token", "edge", GatewayKey.generate().public)
        with pytest.raises(AdminUnavailable) as caught:
            await source.request_approval(REQUEST)
    assert str(caught.value) == "the control plane did not answer (ClientConnectorError)"
