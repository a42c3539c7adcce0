"""OAuth token endpoints are fetched on the plan owner's behalf: the gateway's token session reaches only what
the fetch policy allows, connects to what it checked, and never follows a redirect. Backends keep their own
session (they are the plan's chosen endpoints and may be internal)."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from apimcp.backends.base import Failure, JsonBody
from apimcp.backends.oauth_client import ClientCredentials, TokenSession
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.gateway.backends import BackendFactory
from apimcp.importers.openapi import import_openapi
from apimcp.safety.addresses import AddressPolicy, IPAddress

pytestmark = pytest.mark.anyio

SERVICE = import_openapi(str(Path(__file__).resolve().parents[1] / "gateway" / "echo_api.yaml"))
GET_ITEM = SERVICE.operation("get_item")
REFUSED = "Could not obtain backend credentials: the token endpoint at {host} is refused: "


@dataclass
class Upstream:
    """A token endpoint (and a redirecting one) and an API echoing the Authorization it got."""

    host: str
    url: str = ""
    token_requests: list[str] = field(default_factory=list)
    """The Host header of each token request."""
    api_calls: int = 0


async def serve(host: str) -> tuple[Upstream, web.AppRunner]:
    upstream = Upstream(host)

    async def token(request: web.Request) -> web.Response:
        upstream.token_requests.append(request.host)
        return web.json_response({"access_token": "t0k3n", "expires_in": 3600})

    async def moved(request: web.Request) -> web.Response:
        upstream.token_requests.append(request.host)
        return web.Response(status=307, headers={"Location": "/oauth/token"})

    async def api(request: web.Request) -> web.Response:
        upstream.api_calls += 1
        return web.json_response({"authorization": request.headers.get("Authorization")})

    app = web.Application()
    app.router.add_post("/oauth/token", token)
    app.router.add_post("/oauth/moved", moved)
    app.router.add_get("/v1/items/{item}", api)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    upstream.url = f"http://{host}:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    return upstream, runner


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server, runner = await serve("127.0.0.1")
    try:
        yield server
    finally:
        await runner.cleanup()


@pytest.fixture
async def upstream_2() -> AsyncIterator[Upstream]:
    server, runner = await serve("127.0.0.2")
    try:
        yield server
    finally:
        await runner.cleanup()


def resolving(name: str, address: str) -> Any:
    def resolve(host: str, port: int) -> list[IPAddress]:
        assert host == name, f"{host} was resolved"
        return [ipaddress.ip_address(address)]

    return resolve


async def call(tokens: TokenSession, upstream: Upstream, token_url: str) -> Any:
    credentials = ClientCredentials(token_url=token_url, client_id="client", client_secret="s3cret")
    session = new_session()
    try:
        backend = RestBackend(
            SERVICE, session, base_url=f"{upstream.url}/v1", credentials=credentials, oauth_session=tokens
        )
        assert GET_ITEM is not None
        return await backend.call(GET_ITEM, {"itemId": "1"})
    finally:
        await tokens.close()
        await close_session(session)


async def test_a_token_endpoint_on_loopback_is_refused_before_any_request(upstream: Upstream) -> None:
    result = await call(TokenSession(), upstream, f"{upstream.url}/oauth/token")
    assert isinstance(result, Failure)
    assert result.message.startswith(REFUSED.format(host="127.0.0.1") + "127.0.0.1 is a loopback address")
    assert "--fetch-allow 127.0.0.1" in result.message
    assert "s3cret" not in result.message
    assert upstream.token_requests == [] and upstream.api_calls == 0


async def test_a_token_endpoint_whose_name_resolves_to_loopback_is_refused(upstream: Upstream) -> None:
    port = upstream.url.rsplit(":", 1)[1]
    tokens = TokenSession(resolve=resolving("tokens.test", "127.0.0.1"))
    result = await call(tokens, upstream, f"http://tokens.test:{port}/oauth/token")
    assert isinstance(result, Failure)
    assert "tokens.test resolves to a loopback address" in result.message
    assert upstream.token_requests == []


async def test_an_allowed_token_endpoint_is_reached_at_the_checked_address(upstream_2: Upstream) -> None:
    """tokens.test means nothing to the system's resolver: the request can only have gone to the address the
    policy's resolver checked."""
    port = upstream_2.url.rsplit(":", 1)[1]
    tokens = TokenSession(AddressPolicy.allowing(["tokens.test"]), resolving("tokens.test", "127.0.0.2"))
    result = await call(tokens, upstream_2, f"http://tokens.test:{port}/oauth/token")
    assert isinstance(result, JsonBody), result
    assert result.value == {"authorization": "Bearer t0k3n"}
    assert upstream_2.token_requests == [f"tokens.test:{port}"]  # the Host header keeps the name


async def test_a_token_endpoint_redirect_is_not_followed(upstream: Upstream) -> None:
    tokens = TokenSession(AddressPolicy.allowing(["127.0.0.1"]))
    result = await call(tokens, upstream, f"{upstream.url}/oauth/moved")
    assert result == Failure(
        "Could not obtain backend credentials: the token endpoint at 127.0.0.1 answered HTTP 307", local=True
    )
    assert upstream.token_requests == [upstream.url.removeprefix("http://")]  # the redirect target was not asked


async def test_the_gateway_fetches_tokens_under_its_policy_and_calls_backends_as_planned(upstream: Upstream) -> None:
    member = {
        "credentials": {
            "kind": "oauth_client_credentials",
            "fields": {"token_url": f"{upstream.url}/oauth/token", "client_id": "client"},
            "values": {"client_secret": "s3cret"},
        },
        "backend_timeout_ms": 2000,
        "backend_endpoint": f"{upstream.url}/v1",  # a loopback backend: the plan's choice, not a fetch
    }
    session = new_session()
    strict, allowing = (
        BackendFactory(session),
        BackendFactory(session, fetch_policy=AddressPolicy.allowing(["127.0.0.1"])),
    )
    try:
        assert GET_ITEM is not None
        refused = await strict.build(SERVICE, member).call(GET_ITEM, {"itemId": "1"})
        assert isinstance(refused, Failure) and "is refused: 127.0.0.1 is a loopback address" in refused.message
        assert upstream.token_requests == []
        served = await allowing.build(SERVICE, member).call(GET_ITEM, {"itemId": "1"})
        assert isinstance(served, JsonBody) and served.value == {"authorization": "Bearer t0k3n"}
        plain = {**member, "credentials": {"kind": "bearer", "fields": {}, "values": {"token": "plain"}}}
        called = await strict.build(SERVICE, plain).call(GET_ITEM, {"itemId": "1"})
        assert isinstance(called, JsonBody) and called.value == {"authorization": "Bearer plain"}
    finally:
        await strict.close()
        await allowing.close()
        await close_session(session)
