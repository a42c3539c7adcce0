"""The official MCP client's own OAuth flow against a protected exposition, in both eras: a 401 sends it to
the protected resource metadata, it registers itself with the authorization server (RFC 7591), sends the user
to log in (automated here), exchanges the code with PKCE for a token bound to the exposition (RFC 8707) and
calls; a tool that needs more scope makes it step up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.auth.conftest import DESKTOP, DESKTOP_SECRET, REDIRECT, live_oauth_gateway, oauth_config
from tests.support.idp import Browser, Idp

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_oauth_gateway(oauth_config(idp.issuer), tmp_path_factory.mktemp("gw")) as base:
        yield base


class MemoryStorage:
    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class User:
    """Someone at a browser, who logs in whenever the client sends them to the authorization server."""

    def __init__(self, name: str) -> None:
        self.browser = Browser(name)
        self.logins = 0
        self._answer: dict[str, str] = {}

    async def redirect(self, url: str) -> None:
        self.logins += 1
        self._answer = await asyncio.to_thread(self.browser.authorize, url, REDIRECT)

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=self._answer["code"], state=self._answer.get("state"),
                                       iss=self._answer.get("iss"))  # fmt: skip


@asynccontextmanager
async def signed_in(
    url: str, user: User, mode: str, registered: OAuthClientInformationFull | None = None
) -> AsyncIterator[Client]:
    """A client of `url` for `user`: registered by itself (RFC 7591) unless `registered` is given."""
    metadata = OAuthClientMetadata(
        client_name="apimcp-test", redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"],
        response_types=["code"], token_endpoint_auth_method="client_secret_basic",
    )  # fmt: skip
    auth = OAuthClientProvider(url, metadata, MemoryStorage(registered), redirect_handler=user.redirect,
                               callback_handler=user.callback)  # fmt: skip
    try:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            yield client
    finally:
        user.browser.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_signs_in_and_calls_in_both_eras(gateway: str, mode: str) -> None:
    user = User("alice")
    async with signed_in(f"{gateway}/mcp/echo", user, mode) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "get_item" in names
        assert "delete_item" not in names  # needs mcp:write, which alice's token lacks
        result = await client.call_tool("get_item", {"itemId": "5"})
        assert result.structured_content is not None
        assert result.structured_content["path"] == "/v1/items/5"
    assert user.logins == 1


async def test_a_tool_that_needs_more_scope_makes_the_client_step_up(gateway: str) -> None:
    """A pre-registered client (registration limits a self-registered one to the scopes it first asked for)."""
    user = User("alice")
    registered = OAuthClientInformationFull(
        client_id=DESKTOP, client_secret=DESKTOP_SECRET, redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="client_secret_basic",
    )  # fmt: skip
    async with signed_in(f"{gateway}/mcp/echo", user, "2026-07-28", registered) as client:
        await client.list_tools()
        result = await client.call_tool("delete_item", {"itemId": "5"})
        assert not result.is_error
    assert user.logins == 2  # once to get in, once more for mcp:write
