"""Code mode behind a real authorization server, with the official client in both eras: a program calls on its
caller's behalf, so a tool its token's scopes forbid is refused inside it (and never found), and a per-user
credential its call needs is asked of the user mid-program (a URL elicitation in a 2025-11-25 session,
`input_required` in 2026-07-28), after which the program runs again with it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client, types
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.auth.conftest import ECHO_SPEC, SERVICE
from tests.auth.test_user_credentials import TOKENS, supply
from tests.auth.user_backend import Accounts, running_accounts
from tests.gateway.conftest import live_echo_gateway
from tests.support.idp import Idp

HERE = Path(__file__).parent
WHO = "const me = await tools.who_am_i({});\nreturn {user: me.user};"
DELETE = "const read = await tools.get_item({itemId: '1'});\n\nawait tools.delete_item({itemId: '1'});\nreturn read;"

pytestmark = pytest.mark.anyio


def _config(backend: str, issuer: str) -> str:
    """`backend`: the accounts backend; the echo service's is the echo backend (`live_echo_gateway`)."""
    oauth = f'oauth: {{issuers: ["{issuer}"], scopes: [mcp:read], tool_scopes: {{delete_item: [mcp:write]}}}}'
    return f"""
services:
  accounts:
    openapi: {HERE / "user_api.yaml"}
    backend: {backend}
    credentials: {{type: user_token, name: accounts-token}}
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}"}}
expositions:
  accounts:
    services: [accounts]
    code_mode: on
  accounts-sso:
    services: [accounts]
    code_mode: on
    auth: {{oauth: {{issuers: ["{issuer}"]}}}}
  echo:
    services: [echo]
    code_mode: on
    auth: {{{oauth}}}
server:
  fetch_allow: [127.0.0.1]
"""


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    accounts = Accounts(tokens=dict(TOKENS))
    with (
        running_accounts(accounts) as backend,
        live_echo_gateway(_config(backend, idp.issuer), tmp_path_factory.mktemp("gw")) as base,
    ):
        yield base


def _client(url: str, token: str, **options: object) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_a_tool_the_token_s_scopes_forbid_is_refused_inside_the_program(
    gateway: str, idp: Idp, mode: str
) -> None:
    url = f"{gateway}/mcp/echo"
    reader = idp.token(SERVICE, url, "mcp:read")
    http, client = _client(url, reader, mode=mode)
    async with http, client:
        result = await client.call_tool("execute_code", {"code": DELETE})
        assert result.is_error
        assert result.content[0].text == (  # type: ignore[union-attr]
            "The program failed at line 3: tools.delete_item failed: Calling delete_item needs the scope mcp:write, "
            "which the access token lacks"
        )
        found = await client.call_tool("search_tools", {"query": "delete an item", "limit": 20})
        assert found.structured_content is not None
        assert "delete_item" not in [hit["name"] for hit in found.structured_content["tools"]]
    writer = idp.token(SERVICE, url, "mcp:read mcp:write")
    http, client = _client(url, writer, mode=mode)
    async with http, client:
        allowed = await client.call_tool("execute_code", {"code": DELETE})
        assert not allowed.is_error, allowed
        assert allowed.structured_content is not None and allowed.structured_content["path"] == "/v1/items/1"


async def test_a_session_is_asked_by_url_elicitation_for_the_credential_a_program_needs(gateway: str) -> None:
    async with Client(f"{gateway}/mcp/accounts", mode="legacy") as client:  # a 2025-11-25 session
        with pytest.raises(MCPError) as asked:
            await client.call_tool("execute_code", {"code": WHO})
        assert asked.value.error.code == -32042
        (elicitation,) = asked.value.error.data["elicitations"]  # type: ignore[index]
        assert elicitation["mode"] == "url" and "accounts-token" in elicitation["message"]
        assert (await asyncio.to_thread(supply, elicitation["url"], "bob-token-0123456789")).status_code == 200
        answered = await client.call_tool("execute_code", {"code": WHO})  # the client retries once the user is done
        assert answered.structured_content == {"user": "bob"}


async def test_a_modern_client_is_asked_by_input_required_mid_program_and_its_retry_runs_it_again(
    gateway: str, idp: Idp
) -> None:
    url = f"{gateway}/mcp/accounts-sso"
    links: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        links.append(params.url)
        await asyncio.to_thread(supply, params.url, "alice-token-0123456789")
        return types.ElicitResult(action="accept")

    http, client = _client(url, idp.token(SERVICE, url), mode="2026-07-28", elicitation_callback=elicit)
    async with http, client:
        first = await client.call_tool("execute_code", {"code": WHO})
        assert first.structured_content == {"user": "alice"}, first
        assert len(links) == 1 and links[0].startswith(f"{gateway}/elicitation/")
        again = await client.call_tool("execute_code", {"code": WHO})  # kept for this user: not asked again
        assert again.structured_content == {"user": "alice"}
        assert len(links) == 1
