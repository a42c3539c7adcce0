"""Each user's own backend credential, asked for by URL elicitation, in both eras: a REST backend that answers
as whoever the token belongs to, so every test sees exactly whose credential a call carried."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp import Client, types
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from tests.auth.conftest import EXCHANGER, EXCHANGER_SECRET, INTROSPECTOR, SERVICE, live_gateway_of
from tests.auth.user_backend import Accounts, running_accounts
from tests.support.idp import Browser, Idp
from tests.support.mcp_http import McpHttp, Session, sse_messages
from tests.support.processes import free_port

HERE = Path(__file__).parent
TOKENS = {"alice-token-0123456789": "alice", "bob-token-0123456789": "bob"}


def accounts_config(backend: str, issuer: str, credentials: str = "{type: user_token, name: accounts-token}") -> str:
    return f"""
services:
  accounts:
    openapi: {HERE / "user_api.yaml"}
    backend: {backend}
    credentials: {credentials}
expositions:
  accounts:
    services: [accounts]
  accounts-sso:
    services: [accounts]
    auth:
      oauth: {{issuers: ["{issuer}"]}}
server:
  fetch_allow: [127.0.0.1]
"""


@pytest.fixture(scope="module")
def accounts() -> Accounts:
    return Accounts(tokens=dict(TOKENS))


@pytest.fixture(scope="module")
def gateway(accounts: Accounts, idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with (
        running_accounts(accounts) as backend,
        live_gateway_of(accounts_config(backend, idp.issuer), tmp_path_factory.mktemp("gw")) as base,
    ):
        yield base


def supply(link: str, token: str) -> httpx2.Response:
    """What the user does with the link: open it, paste their token, send the form."""
    with httpx2.Client(timeout=10) as browser:
        page = browser.get(link)
        assert page.status_code == 200, page.text
        assert 'name="token"' in page.text
        assert "It will be used for" in page.text  # whose it will be: a link sent by someone else shows it
        return browser.post(link, data={"token": token})


WHO = {"name": "who_am_i", "arguments": {}}


def who(session: Session) -> str:
    """Whose credential the session's call carried, as the backend says."""
    return str(session.request("tools/call", WHO).result["structuredContent"]["user"])


def asked(session: Session) -> dict[str, Any]:
    """The URL elicitation a call is answered with."""
    return elicitation_of(session.request("tools/call", WHO).error)


def elicitation_of(reply_error: dict[str, Any]) -> dict[str, Any]:
    assert reply_error["code"] == -32042, reply_error
    (elicitation,) = reply_error["data"]["elicitations"]
    assert elicitation["mode"] == "url"
    return dict(elicitation)


def open_session(url: str, token: str | None = None) -> tuple[McpHttp, Session]:
    mcp = McpHttp(url)
    if token is not None:
        mcp.http.headers["authorization"] = f"Bearer {token}"
    return mcp, mcp.initialize(capabilities={"elicitation": {"url": {}}})


class Listening:
    """A session's GET stream, read in a thread."""

    def __init__(self, session: Session) -> None:
        self.messages: list[Any] = []
        self.got = threading.Event()
        self._session = session
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        headers = {**self._session.headers(), "accept": "text/event-stream"}
        with httpx2.Client(timeout=15) as http, http.stream("GET", self._session.client.url, headers=headers) as stream:
            for message in sse_messages(stream.iter_lines()):
                self.messages.append(message)
                self.got.set()
                return


def test_a_session_supplies_its_own_token_through_the_link_and_hears_when_it_is_done(
    gateway: str, accounts: Accounts
) -> None:
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    with mcp:
        listening = Listening(session)
        asked = session.request("tools/call", {"name": "who_am_i", "arguments": {}})
        elicitation = elicitation_of(asked.error)
        assert elicitation["url"].startswith(f"{gateway}/elicitation/")
        assert "accounts-token" in elicitation["message"]
        assert supply(elicitation["url"], "alice-token-0123456789").status_code == 200
        assert listening.got.wait(10)
        assert listening.messages[0]["method"] == "notifications/elicitation/complete"
        assert listening.messages[0]["params"] == {"elicitationId": elicitation["elicitationId"]}
        answered = session.request("tools/call", {"name": "who_am_i", "arguments": {}})
        assert answered.result["structuredContent"]["user"] == "alice"
    assert accounts.seen[-1]["Authorization"] == "Bearer alice-token-0123456789"


def test_two_sessions_never_see_each_other_s_credentials(gateway: str) -> None:
    mcp_a, alice = open_session(f"{gateway}/mcp/accounts")
    mcp_b, bob = open_session(f"{gateway}/mcp/accounts")
    with mcp_a, mcp_b:
        link = asked(alice)["url"]
        supply(link, "alice-token-0123456789")
        assert who(alice) == "alice"
        other = asked(bob)
        assert other["url"] != link
        supply(other["url"], "bob-token-0123456789")
        assert who(bob) == "bob"
        assert who(alice) == "alice"


def test_a_link_works_once_and_made_up_links_work_never(gateway: str) -> None:
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    with mcp:
        link = asked(session)["url"]
        assert supply(link, "alice-token-0123456789").status_code == 200
        with httpx2.Client(timeout=10) as browser:
            replayed = browser.post(link, data={"token": "bob-token-0123456789"})
            assert replayed.status_code == 410
            assert "no longer works" in replayed.text
            assert browser.get(link).status_code == 404
            assert browser.post(f"{gateway}/elicitation/made-up-id", data={"token": "x" * 20}).status_code == 410
        # the replay planted nothing: the session still calls as alice
        assert who(session) == "alice"


def test_a_link_of_one_session_puts_the_value_in_that_session_only(gateway: str) -> None:
    """Whoever opens a link, the value goes to the session (or user) that asked: the page cannot choose."""
    mcp_a, victim = open_session(f"{gateway}/mcp/accounts")
    mcp_b, other = open_session(f"{gateway}/mcp/accounts")
    with mcp_a, mcp_b:
        victim_link = asked(victim)["url"]
        supply(victim_link, "bob-token-0123456789")  # someone else completes the victim's link with their token
        assert other.request("tools/call", {"name": "who_am_i", "arguments": {}}).body["error"]["code"] == -32042


def test_a_backend_401_forgets_the_value_and_asks_again(gateway: str, accounts: Accounts) -> None:
    accounts.tokens["carol-token-0123456789"] = "carol"
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    with mcp:
        supply(asked(session)["url"],
               "carol-token-0123456789")  # fmt: skip
        assert who(session) == "carol"
        del accounts.tokens["carol-token-0123456789"]  # the user revoked it at the API
        again = asked(session)
        supply(again["url"], "alice-token-0123456789")
        assert who(session) == "alice"


def test_revisions_without_url_elicitation_get_an_error_naming_what_is_needed(gateway: str) -> None:
    with McpHttp(f"{gateway}/mcp/accounts") as mcp:
        session = mcp.initialize("2025-06-18", capabilities={"elicitation": {}})
        error = session.request("tools/call", {"name": "who_am_i", "arguments": {}}).error
    assert error["code"] == -32600
    assert "accounts-token" in error["message"]
    assert f"{gateway}/elicitation/" in error["message"]


# --- 2026-07-28: values bound to the authenticated user --------------------------------------------------


def user_token(idp: Idp, gateway: str, client_id: str = SERVICE) -> str:
    return idp.token(client_id, f"{gateway}/mcp/accounts-sso")


def completing(token: str, answers: list[str]) -> Any:
    """An elicitation callback that supplies `token` at the link it is given, as the user would."""

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        answers.append(params.url)
        await asyncio.to_thread(supply, params.url, token)
        return types.ElicitResult(action="accept")

    return elicit


@pytest.mark.anyio
async def test_a_modern_client_is_asked_by_input_required_and_the_value_is_bound_to_its_user(
    gateway: str, idp: Idp
) -> None:
    url = f"{gateway}/mcp/accounts-sso"
    alice_links: list[str] = []
    token = user_token(idp, gateway)
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="2026-07-28",
            elicitation_callback=completing("alice-token-0123456789", alice_links),
        ) as client,  # fmt: skip
    ):
        first = await client.call_tool("who_am_i", {})
        assert first.structured_content == {"user": "alice", "headers": first.structured_content["headers"]}
        assert len(alice_links) == 1
        again = await client.call_tool("who_am_i", {})  # kept for this user: not asked again
        assert again.structured_content is not None
        assert again.structured_content["user"] == "alice"
        assert len(alice_links) == 1


def test_a_modern_request_without_an_authenticated_user_is_told_why(gateway: str) -> None:
    with McpHttp(f"{gateway}/mcp/accounts") as mcp:
        reply = mcp.modern(
            "tools/call", {"name": "who_am_i", "arguments": {}}, capabilities={"elicitation": {"url": {}}}
        )
    result = reply.result
    assert result["isError"] is True
    assert "names no user" in result["content"][0]["text"]


def test_a_request_state_issued_to_one_user_is_refused_to_another(gateway: str, idp: Idp) -> None:
    url = f"{gateway}/mcp/accounts-sso"
    capabilities = {"elicitation": {"url": {}}}
    call = {"name": "who_am_i", "arguments": {}}
    with McpHttp(url) as first:
        first.http.headers["authorization"] = f"Bearer {user_token(idp, gateway, EXCHANGER)}"
        asked = first.modern("tools/call", call, capabilities=capabilities).result
    assert asked["resultType"] == "input_required"
    (key,) = asked["inputRequests"]
    with McpHttp(url) as second:
        second.http.headers["authorization"] = f"Bearer {user_token(idp, gateway, INTROSPECTOR)}"
        retry = {**call, "requestState": asked["requestState"], "inputResponses": {key: {"action": "accept"}}}
        reply = second.modern("tools/call", retry, capabilities=capabilities)
    assert reply.status == 400
    assert "issued to a different user" in reply.error["message"]


# --- resources read from the backend: the same preparation as a tool call -----------------------------------

ME_FILE = """apiVersion: reshapr.io/v1alpha1
kind: Resources
service: {name: Accounts API, version: "1"}
resources:
  file:///me: {name: me, mimeType: application/json}
"""


@pytest.fixture(scope="module")
def files_gateway(accounts: Accounts, idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The accounts service with a `file:///me` resource, a header policy, and each user's own token."""
    folder = tmp_path_factory.mktemp("files")
    (folder / "me.yaml").write_text(ME_FILE)
    extra = "    header_policy: {allow: [x-tenant]}\n    artifacts: [me.yaml]\n"
    with running_accounts(accounts) as backend:
        config = accounts_config(backend, idp.issuer).replace(
            "{type: user_token, name: accounts-token}\n", "{type: user_token, name: accounts-token}\n" + extra
        )
        with live_gateway_of(config, folder) as base:
            yield base


def read_me(session: Session) -> Any:
    return session.request("resources/read", {"uri": "file:///me"}, {"x-tenant": "acme", "x-secret": "never"})


def test_a_resource_read_asks_for_the_user_s_credential_and_passes_on_what_the_policy_allows(
    files_gateway: str, accounts: Accounts
) -> None:
    """Finding: `file://` reads used the member's raw backend: no header policy, no per-user credential (the
    read went out with none), no CLIENT span."""
    mcp, session = open_session(f"{files_gateway}/mcp/accounts")
    with mcp:
        elicitation = elicitation_of(read_me(session).error)  # before the fix: read with no credential, a 401
        assert "accounts-token" in elicitation["message"]
        assert supply(elicitation["url"], "bob-token-0123456789").status_code == 200
        (contents,) = read_me(session).result["contents"]
    read = json.loads(contents["text"])
    assert read["user"] == "bob"
    sent = {name.lower(): value for name, value in accounts.seen[-1].items()}
    assert sent["authorization"] == "Bearer bob-token-0123456789"
    assert sent["x-tenant"] == "acme"  # what the plan's policy passes on, and nothing else of the client's
    assert "x-secret" not in sent


def test_a_resource_read_without_a_user_to_ask_gets_the_tool_call_s_reason(files_gateway: str) -> None:
    with McpHttp(f"{files_gateway}/mcp/accounts") as mcp:
        reply = mcp.modern("resources/read", {"uri": "file:///me"}, capabilities={"elicitation": {"url": {}}})
    assert reply.error["code"] == -32603
    assert "names no user" in reply.error["message"]


@pytest.mark.anyio
async def test_a_modern_client_reading_a_resource_is_asked_by_input_required(files_gateway: str, idp: Idp) -> None:
    links: list[str] = []
    token = idp.token(SERVICE, f"{files_gateway}/mcp/accounts-sso")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(
            streamable_http_client(f"{files_gateway}/mcp/accounts-sso", http_client=http),
            mode="2026-07-28",
            elicitation_callback=completing("alice-token-0123456789", links),
        ) as client,  # fmt: skip
    ):
        read = await client.read_resource("file:///me")
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert json.loads(contents.text)["user"] == "alice"
    assert len(links) == 1


# --- OAuth connections: each user connects their own account --------------------------------------------

BACKEND_RESOURCE = "http://accounts.example/api"


def register_connector(idp: Idp, callback: str) -> tuple[str, str]:
    """The gateway's client at the backend's authorization server, registered as an operator would."""
    answer = httpx2.post(
        f"{idp.issuer}/reg",
        json={"redirect_uris": [callback], "grant_types": ["authorization_code", "refresh_token"],
              "response_types": ["code"], "token_endpoint_auth_method": "client_secret_basic"},
        timeout=10,
    )  # fmt: skip
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"], answer.json()["client_secret"]


@pytest.fixture
def connected(idp: Idp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Accounts]]:
    """A gateway whose accounts service is called with each user's own connected account (user_oauth)."""
    port = free_port()
    client_id, secret = register_connector(idp, f"http://127.0.0.1:{port}/elicitation/callback")
    monkeypatch.setenv("APIMCP_TEST_CONNECTOR_SECRET", secret)
    credentials = (
        f'{{type: user_oauth, name: accounts-connect, authorization_url: "{idp.issuer}/auth", '
        f'token_url: "{idp.issuer}/token", client_id: {client_id}, '
        "client_secret: {env: APIMCP_TEST_CONNECTOR_SECRET}, "
        f'scopes: [backend:read], resource: "{BACKEND_RESOURCE}"}}'
    )
    accounts = Accounts(issuer=idp.issuer, audience=BACKEND_RESOURCE)
    with (
        running_accounts(accounts) as backend,
        live_gateway_of(accounts_config(backend, idp.issuer, credentials), tmp_path, port=port) as base,
    ):
        yield base, accounts


def test_a_user_connects_their_account_and_calls_as_themselves(connected: tuple[str, Accounts]) -> None:
    gateway, accounts = connected
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    browser = Browser("alice")
    try:
        link = asked(session)["url"]
        page = browser.go(link)
        assert isinstance(page, httpx2.Response)
        assert "/connect" in page.text
        to_provider = browser.connect(link)  # the page's Connect button
        assert to_provider.status_code == 303, to_provider.text
        done = browser.go(str(to_provider.headers["location"]))  # the provider, the login, back to the callback
        assert isinstance(done, httpx2.Response)
        assert done.status_code == 200, done.text
        assert "Connected" in done.text
        assert who(session) == "alice"
        presented = accounts.seen[-1]["Authorization"]
        assert presented.startswith("Bearer ey")  # the provider's token for alice, for the backend's audience
    finally:
        browser.close()
        mcp.close()


def test_a_connection_starts_only_from_its_page_which_names_whose_it_will_be(connected: tuple[str, Accounts]) -> None:
    """The finding: `GET .../connect`, sent to a victim, went straight to the provider without the page that says
    whose the connection will be, and the victim's account ended up linked to the sender's."""
    gateway, _ = connected
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    victim = Browser("alice")
    try:
        link = asked(session)["url"]
        sent = victim.http.get(f"{link}/connect")  # mallory's link, opened by alice
        assert sent.status_code == 303 and sent.headers["location"] == urlsplit(link).path  # the page, not the provider
        page = victim.http.get(link)
        assert "It will be used for" in page.text and f'action="{urlsplit(link).path}/connect"' in page.text
        for origin in ({"Origin": "https://mallory.example"}, {"Origin": "null"}, {}):  # a form or a script elsewhere
            refused = victim.http.post(f"{link}/connect", headers=origin)
            assert refused.status_code == 403, origin
            assert "set-cookie" not in refused.headers
        assert asked(session)["url"]  # nothing was stored
    finally:
        victim.close()
        mcp.close()


def test_a_connection_can_only_be_finished_in_the_browser_that_started_it(
    connected: tuple[str, Accounts], idp: Idp
) -> None:
    gateway, _ = connected
    mcp, session = open_session(f"{gateway}/mcp/accounts")
    starter, attacker = Browser("mallory"), Browser("mallory")
    try:
        link = asked(session)["url"]
        to_provider = starter.connect(link)
        assert to_provider.status_code == 303
        callback = starter.go(str(to_provider.headers["location"]), stop_at=f"{gateway}/elicitation/callback")
        assert isinstance(callback, str)
        # The callback URL, with its code and state, opened in another browser (a victim sent a crafted link):
        refused = attacker.http.get(callback)
        assert refused.status_code == 400
        assert "does not belong to a connection started in this browser" in refused.text
        assert asked(session)["url"]  # nothing was stored
    finally:
        starter.close()
        attacker.close()
        mcp.close()


# --- token exchange (RFC 8693): a backend token obtained with the caller's own ----------------------------


def test_a_backend_token_is_exchanged_for_the_caller_s_and_reused(
    idp: Idp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APIMCP_TEST_EXCHANGE_SECRET", EXCHANGER_SECRET)
    credentials = (
        f'{{type: token_exchange, name: accounts-exchange, token_url: "{idp.issuer}/token", client_id: {EXCHANGER}, '
        f'client_secret: {{env: APIMCP_TEST_EXCHANGE_SECRET}}, audience: "{BACKEND_RESOURCE}"}}'
    )
    accounts = Accounts(issuer=idp.issuer, audience=BACKEND_RESOURCE)
    before = idp.stats()["exchanges"]
    with (
        running_accounts(accounts) as backend,
        live_gateway_of(accounts_config(backend, idp.issuer, credentials), tmp_path) as gateway,
        McpHttp(f"{gateway}/mcp/accounts-sso") as mcp,
    ):
        caller_token = user_token(idp, gateway)
        mcp.http.headers["authorization"] = f"Bearer {caller_token}"
        for _ in range(3):
            assert mcp.modern("tools/call", WHO).result["structuredContent"]["user"] == SERVICE
        with McpHttp(f"{gateway}/mcp/accounts") as anonymous:
            refused = anonymous.modern("tools/call", WHO).result
    assert idp.stats()["exchanges"] - before == 1  # exchanged once, then reused
    sent = accounts.seen[-1]["Authorization"]
    assert sent.startswith("Bearer ") and caller_token not in sent
    assert refused["isError"] is True
    assert "carries no access token" in refused["content"][0]["text"]
