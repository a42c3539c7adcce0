"""Backend calls authorised by the OAuth 2 client credentials grant, against a real local token endpoint."""

from __future__ import annotations

import asyncio
import base64
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from redis.asyncio import Redis

from apimcp.backends import oauth_client
from apimcp.backends.base import BackendResult, Failure, JsonBody
from apimcp.backends.oauth_client import ClientCredentials
from apimcp.backends.oauth_http import TokenSession
from apimcp.backends.rest import RestBackend, close_session, new_session
from apimcp.importers.openapi import import_openapi
from apimcp.safety.addresses import AddressPolicy
from apimcp.state.redis_values import RedisUserValueStore
from apimcp.state.sealed import ValueSealer
from apimcp.state.user_values import MemoryUserValueStore
from tests.state.conftest import REDIS_URL

pytestmark = pytest.mark.anyio

SECRET = "cl1ent-s3cret-never-shown"
CLIENT_ID = "backend-client"
SERVICE = import_openapi(str(Path(__file__).resolve().parents[1] / "gateway" / "echo_api.yaml"))
GET_ITEM = SERVICE.operation("get_item")
MISSING = object()


@dataclass
class Upstream:
    """A token endpoint at /oauth/token and an API at /v1 that answers with the Authorization it received."""

    url: str = ""
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    api_authorizations: list[str | None] = field(default_factory=list)
    answers: list[tuple[int, bytes, str]] = field(default_factory=list)
    """Answers the token endpoint gives first, in order; then it issues token-1, token-2..."""
    expires_in: object = 3600
    delay: float = 0.0

    async def token(self, request: web.Request) -> web.Response:
        body = (await request.read()).decode()
        self.token_requests.append(
            {
                "method": request.method,
                "content_type": request.headers.get("Content-Type"),
                "authorization": request.headers.get("Authorization"),
                "accept": request.headers.get("Accept"),
                "body": body,
                "form": dict(urllib.parse.parse_qsl(body, keep_blank_values=True)),
            }
        )
        await asyncio.sleep(self.delay)
        if self.answers:
            status, content, media_type = self.answers.pop(0)
            return web.Response(status=status, body=content, content_type=media_type)
        issued: dict[str, Any] = {"access_token": f"token-{len(self.token_requests)}", "token_type": "Bearer"}
        if self.expires_in is not MISSING:
            issued["expires_in"] = self.expires_in
        return web.json_response(issued)

    async def api(self, request: web.Request) -> web.Response:
        received = request.headers.get("Authorization")
        self.api_authorizations.append(received)
        # Reversed too: a spelling no mask knows, so that tests read what arrived through the gateway's masking.
        return web.json_response({"authorization": received, "reversed": received[::-1] if received else None})


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server = Upstream()
    app = web.Application()
    app.router.add_post("/oauth/token", server.token)
    app.router.add_get("/v1/items/{item}", server.api)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    try:
        yield server
    finally:
        await runner.cleanup()


class Clock:
    """Stands in for the token cache's monotonic clock, so expiry needs no waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(oauth_client, "time", fake)
    return fake


@asynccontextmanager
async def backend(upstream: Upstream, **credentials: Any) -> AsyncIterator[RestBackend]:
    values: dict[str, Any] = {
        "token_url": f"{upstream.url}/oauth/token",
        "client_id": CLIENT_ID,
        "client_secret": SECRET,
        **credentials,
    }
    session = new_session()
    try:
        yield RestBackend(SERVICE, session, base_url=f"{upstream.url}/v1", credentials=ClientCredentials(**values))
    finally:
        await close_session(session)


async def authorization(rest: RestBackend) -> str:
    """The Authorization header one call delivered to the API (whose echo of it the client sees masked)."""
    assert GET_ITEM is not None
    result: BackendResult = await rest.call(GET_ITEM, {"itemId": "1"})
    assert isinstance(result, JsonBody), result
    assert result.value["authorization"] == "Bearer ***"
    value: str = result.value["reversed"][::-1]
    return value


def basic(client_id: str, secret: str) -> str:
    """client_secret_basic as RFC 6749 says: each part form-encoded, then joined and base64-encoded."""
    pair = f"{urllib.parse.quote_plus(client_id)}:{urllib.parse.quote_plus(secret)}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


async def test_the_token_request_and_the_bearer_token(upstream: Upstream) -> None:
    async with backend(upstream, scopes=("items:read", "items:write"), audience="https://api.example.com") as rest:
        assert await authorization(rest) == "Bearer token-1"
    [sent] = upstream.token_requests
    assert sent["method"] == "POST"
    assert sent["content_type"] == "application/x-www-form-urlencoded"
    assert sent["form"] == {
        "grant_type": "client_credentials",
        "scope": "items:read items:write",
        "audience": "https://api.example.com",
    }
    assert sent["authorization"] == basic(CLIENT_ID, SECRET)  # client_secret_basic, not in the form
    assert SECRET not in sent["body"]
    assert sent["accept"] == "application/json"
    assert upstream.api_authorizations == ["Bearer token-1"]


async def test_no_scope_or_audience_unless_configured(upstream: Upstream) -> None:
    async with backend(upstream, client_secret="sécret-€") as rest:
        assert await authorization(rest) == "Bearer token-1"
    [sent] = upstream.token_requests
    assert sent["form"] == {"grant_type": "client_credentials"}
    assert sent["authorization"] == basic(CLIENT_ID, "sécret-€")  # UTF-8, percent-encoded


async def test_the_token_is_reused_until_15_seconds_before_it_expires(upstream: Upstream, clock: Clock) -> None:
    upstream.expires_in = 60
    async with backend(upstream) as rest:
        for _ in range(5):
            assert await authorization(rest) == "Bearer token-1"
        clock.now += 44.9
        assert await authorization(rest) == "Bearer token-1"
        assert len(upstream.token_requests) == 1
        clock.now += 0.2  # 45.1 s after issue: within 15 s of expiry
        assert await authorization(rest) == "Bearer token-2"
        assert await authorization(rest) == "Bearer token-2"
    assert len(upstream.token_requests) == 2
    assert upstream.api_authorizations == ["Bearer token-1"] * 6 + ["Bearer token-2"] * 2


@pytest.mark.parametrize(
    ("expires_in", "reused_for"),
    [
        (3600, 3585.0),
        (MISSING, 285.0),  # no expires_in: assumed to live 300 s
        ("soon", 285.0),  # not a number: likewise
        (10, 5.0),  # short-lived: renewed at half its life
        (2, 1.0),  # never used past its expiry (a floor of 5 s once kept it 3 s too long)
    ],
    ids=["hour", "absent", "not-a-number", "short", "very-short"],
)
async def test_when_tokens_are_renewed(upstream: Upstream, clock: Clock, expires_in: object, reused_for: float) -> None:
    upstream.expires_in = expires_in
    async with backend(upstream) as rest:
        assert await authorization(rest) == "Bearer token-1"
        clock.now += reused_for - 0.1
        assert await authorization(rest) == "Bearer token-1"
        clock.now += 0.2
        assert await authorization(rest) == "Bearer token-2"
    assert len(upstream.token_requests) == 2


async def test_a_short_lived_token_is_renewed_in_real_time(upstream: Upstream) -> None:
    """No fake clock: a token the endpoint says lives 1 s is replaced after half a second."""
    upstream.expires_in = 1
    async with backend(upstream) as rest:
        assert await authorization(rest) == "Bearer token-1"
        await asyncio.sleep(0.6)
        assert await authorization(rest) == "Bearer token-2"
    assert len(upstream.token_requests) == 2


async def test_concurrent_calls_share_one_token_request(upstream: Upstream) -> None:
    upstream.delay = 0.3  # every call arrives while the first token request is still out
    async with backend(upstream) as rest:
        headers = await asyncio.gather(*(authorization(rest) for _ in range(20)))
    assert headers == ["Bearer token-1"] * 20
    assert len(upstream.token_requests) == 1


PREFIX = "Could not obtain backend credentials: the token endpoint at 127.0.0.1"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ((400, orjson.dumps({"error": "invalid_client", "error_description": f"wrong secret {SECRET}"}),
          "application/json"), f"{PREFIX} answered HTTP 400 (invalid_client)"),
        ((401, orjson.dumps({"error": "unauthorized_client"}), "application/json"),
         f"{PREFIX} answered HTTP 401 (unauthorized_client)"),
        ((400, orjson.dumps({"error": f"bad {SECRET}"}), "application/json"), f"{PREFIX} answered HTTP 400"),
        ((500, b"<html>internal error</html>", "text/html"), f"{PREFIX} answered HTTP 500"),
        ((200, b"<html>a login page</html>", "text/html"), f"{PREFIX} answered with something other than JSON"),
        ((200, b'{"token_type": "Bearer"}', "application/json"), f"{PREFIX} answered without an access_token"),
        ((200, b'{"access_token": ""}', "application/json"), f"{PREFIX} answered without an access_token"),
        ((200, b'["token"]', "application/json"), f"{PREFIX} answered without an access_token"),
        (  # the finding: a token with a line break was kept, and would have ended the header sending it
            (200, b'{"access_token": "tok\\r\\nX-Injected: 1"}', "application/json"),
            f"{PREFIX} answered an access_token that cannot be sent: it holds the control character CR, "
            "which an HTTP header cannot carry",
        ),
    ],
    ids=["invalid-client", "unauthorized-client", "odd-error-code", "server-error", "not-json", "no-token",
         "empty-token", "not-an-object", "line-break-in-token"],
)  # fmt: skip
async def test_token_endpoint_errors_are_failures(
    upstream: Upstream, answer: tuple[int, bytes, str], message: str
) -> None:
    upstream.answers.append(answer)
    assert GET_ITEM is not None
    async with backend(upstream) as rest:
        result = await rest.call(GET_ITEM, {"itemId": "1"})
    assert result == Failure(message, local=True)  # the backend was not called: nothing learnt of it
    assert SECRET not in result.message
    assert upstream.api_authorizations == []  # the API is not called without a token


async def test_an_error_code_that_is_the_secret_is_not_shown(upstream: Upstream) -> None:
    upstream.answers.append((400, b'{"error": "hunter_two"}', "application/json"))
    assert GET_ITEM is not None
    async with backend(upstream, client_secret="hunter_two") as rest:
        result = await rest.call(GET_ITEM, {"itemId": "1"})
    assert result == Failure(f"{PREFIX} answered HTTP 400", local=True)


async def test_an_unreachable_token_endpoint_is_a_failure(upstream: Upstream) -> None:
    assert GET_ITEM is not None
    async with backend(upstream, token_url="http://127.0.0.1:1/oauth/token") as rest:
        result = await rest.call(GET_ITEM, {"itemId": "1"})
    assert result == Failure(
        "Could not obtain backend credentials: the token endpoint at 127.0.0.1 could not be reached within 15 s",
        local=True,
    )
    assert upstream.api_authorizations == []


async def test_a_failed_token_request_is_not_remembered(upstream: Upstream) -> None:
    upstream.answers.append((503, b"busy", "text/plain"))
    assert GET_ITEM is not None
    async with backend(upstream) as rest:
        first = await rest.call(GET_ITEM, {"itemId": "1"})
        assert first == Failure(f"{PREFIX} answered HTTP 503", local=True)
        assert await authorization(rest) == "Bearer token-2"  # the second token request succeeds
    assert len(upstream.token_requests) == 2


async def test_the_client_id_and_secret_are_form_encoded_before_basic_authentication(upstream: Upstream) -> None:
    """RFC 6749, section 2.3.1. The finding: sent raw, a secret holding `+` or `%` was refused by a server that
    decodes them (oidc-provider), and a client id holding `:` could not be sent at all."""
    assert GET_ITEM is not None
    async with backend(upstream, client_id="tenant:client", client_secret="abc+def%41/=") as rest:
        assert await authorization(rest) == "Bearer token-1"
    (sent,) = upstream.token_requests
    scheme, _, encoded = sent["authorization"].partition(" ")
    pair = base64.b64decode(encoded).decode()
    assert (scheme, pair) == ("Basic", "tenant%3Aclient:abc%2Bdef%2541%2F%3D")
    name, _, secret = pair.partition(":")
    assert (urllib.parse.unquote_plus(name), urllib.parse.unquote_plus(secret)) == ("tenant:client", "abc+def%41/=")


def test_the_secret_is_not_in_the_repr() -> None:
    credentials = ClientCredentials("https://auth.example.com/token", CLIENT_ID, SECRET, ("a",), "aud")
    assert SECRET not in repr(credentials)
    assert CLIENT_ID in repr(credentials)


async def test_an_echoed_oauth_access_token_is_masked_though_it_changes_over_time(
    upstream: Upstream, clock: Clock
) -> None:
    """Finding: a backend echoing its Authorization header handed the OAuth access token to the MCP client.
    The mask follows the token: the first one, and the one that replaces it, are both hidden."""
    upstream.expires_in = 60
    assert GET_ITEM is not None
    async with backend(upstream) as rest:
        for token, wait in (("token-1", 0.0), ("token-2", 60.0)):
            clock.now += wait
            result = await rest.call(GET_ITEM, {"itemId": "1"})
            assert isinstance(result, JsonBody), result
            assert result.value["authorization"] == "Bearer ***"
            assert token not in result.text and SECRET not in result.text
    assert upstream.api_authorizations == ["Bearer token-1", "Bearer token-2"]


@pytest.mark.parametrize("where", ["memory", "redis"])
async def test_replicas_sharing_a_store_share_one_token(upstream: Upstream, where: str) -> None:
    """Two gateways' backends (each with its own token session) on one shared store ask for one token."""
    sealer = ValueSealer(b"k" * 32)
    client = Redis.from_url(REDIS_URL) if where == "redis" else None
    prefix = f"apimcp-test:oauth-{id(upstream)}:"
    shared = RedisUserValueStore(client, sealer, prefix) if client is not None else MemoryUserValueStore(sealer)
    credentials = ClientCredentials(token_url=f"{upstream.url}/oauth/token", client_id=CLIENT_ID, client_secret=SECRET)
    session = new_session()
    tokens = [TokenSession(AddressPolicy.allowing(["127.0.0.1"]), shared=shared) for _ in range(2)]
    try:
        first, second = (
            RestBackend(SERVICE, session, base_url=f"{upstream.url}/v1", credentials=credentials, oauth_session=t)
            for t in tokens
        )
        assert await authorization(first) == "Bearer token-1"
        assert await authorization(second) == "Bearer token-1"
        other = ClientCredentials(token_url=credentials.token_url, client_id="another-client", client_secret=SECRET)
        third = RestBackend(SERVICE, session, base_url=f"{upstream.url}/v1", credentials=other, oauth_session=tokens[1])
        assert await authorization(third) == "Bearer token-2"  # another client: a token of its own
        guessed = ClientCredentials(token_url=credentials.token_url, client_id=CLIENT_ID, client_secret="guess")
        fourth = RestBackend(
            SERVICE, session, base_url=f"{upstream.url}/v1", credentials=guessed, oauth_session=tokens[1]
        )
        assert await authorization(fourth) == "Bearer token-3"  # the client's id without its secret: nothing shared
        assert len(upstream.token_requests) == 3
    finally:
        await close_session(session)
        for t in tokens:
            await t.close()
        if client is not None:
            keys = [k async for k in client.scan_iter(match=prefix + "*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()
