"""Per-user OAuth to an MCP server's own authorization server, found by the gateway: the server (protected by the
real authorization server, oidc-provider) answers 401 with its protected-resource metadata; the gateway finds
the authorization server from it, registers itself dynamically, and each user connects once through URL
elicitation; calls then carry that user's token, for that server's resource."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx2
import orjson
import pytest

from apimcp.elicitation.discovery import MAX_REDIRECT_URIS
from apimcp.gateway.config import ConfigError, parse_config
from apimcp.gateway.plan import plan_gateway
from apimcp.protocol import CallToolResult, McpEndpoint, McpHandler, Page, RequestContext, ServerFeatures, Tool
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.protocol.models import TextContent
from tests.auth.conftest import live_gateway_of
from tests.auth.test_user_credentials import elicitation_of, open_session
from tests.auth.user_backend import Accounts
from tests.support.idp import Browser, Idp, client, running_idp
from tests.support.live_server import live_server, whole_body
from tests.support.processes import free_port

CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="")
PUBLIC = ("server/discover", "initialize", "notifications/initialized", "tools/list")
"""What the server answers without a token: enough to be imported; every call needs a user's."""
WHO = {"name": "whoami", "arguments": {}}


class WhoAmI(McpHandler):
    features = ServerFeatures(tools=True, tools_list_changed=True)  # it would tell list changes on listen streams

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        tool = Tool(name="whoami", description="Says whose token called.", input_schema={"type": "object"})
        return Page(items=(tool,))

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        return CallToolResult(content=(TextContent(text=CALLER.get()),), structured_content={"user": CALLER.get()})


@dataclass
class Protected:
    """The MCP server behind a bearer check, with its protected-resource metadata (RFC 9728)."""

    accounts: Accounts
    endpoint: McpEndpoint = field(default_factory=lambda: McpEndpoint(WhoAmI()))
    base: str = ""
    public: tuple[str, ...] = PUBLIC
    """What it answers without a token."""
    refused: int = 0
    methods: list[str] = field(default_factory=list)
    """Every method asked of it (a request with a JSON body)."""

    @property
    def metadata_url(self) -> str:
        return f"{self.base}/.well-known/oauth-protected-resource/mcp"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.endpoint(scope, receive, send)
            return
        if scope["path"] == "/.well-known/oauth-protected-resource/mcp":
            document = {"resource": f"{self.base}/mcp", "authorization_servers": [self.accounts.issuer],
                        "scopes_supported": ["mcp:read"]}  # fmt: skip
            await _answer(send, 200, orjson.dumps(document), [(b"content-type", b"application/json")])
            return
        body = await whole_body(receive)
        try:
            method = orjson.loads(body).get("method") if body else None
        except (orjson.JSONDecodeError, AttributeError):
            method = None
        if isinstance(method, str):
            self.methods.append(method)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        user = await asyncio.to_thread(self.accounts.user_of, headers.get("authorization"))
        if user is None and method not in self.public:
            self.refused += 1
            challenge = f'Bearer resource_metadata="{self.metadata_url}"'.encode()
            await _answer(send, 401, b"", [(b"www-authenticate", challenge)])
            return
        CALLER.set(user or "")
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.endpoint(scope, replay, send)


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def protected_upstream(idp: Idp) -> Iterator[Protected]:
    protected = Protected(Accounts(issuer=idp.issuer))
    with live_server(protected, protected.endpoint.shutdown) as base:
        protected.base = base.replace("//localhost:", "//127.0.0.1:")
        protected.accounts.audience = f"{protected.base}/mcp"  # tokens for this server's resource only
        yield protected


def _config(upstream: Protected, *, service: str = "", server: str = "") -> str:
    """A gateway fronting `upstream` as `notes`, each user connecting their own account (`service` and `server`:
    more keys of those sections)."""
    return f"""
services:
  notes:
    mcp: {upstream.base}/mcp{service}
    credentials: {{type: user_oauth, name: notes-account}}
server:
  fetch_allow: [127.0.0.1]{server}
"""


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    with running_idp() as provider:
        yield provider


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Protected]]:
    with protected_upstream(idp) as upstream:
        config = _config(upstream)
        with live_gateway_of(config, tmp_path_factory.mktemp("oauth-gw"), port=free_port()) as base:
            yield base, upstream


def test_a_user_connects_to_the_server_s_own_authorization_server_and_calls_as_themselves(
    gateway: tuple[str, Protected], idp: Idp
) -> None:
    base, upstream = gateway
    mcp, session = open_session(f"{base}/mcp/notes")
    browser = Browser("alice")
    try:
        link = elicitation_of(session.request("tools/call", WHO).error)["url"]
        to_provider = browser.connect(link)
        assert to_provider.status_code == 303, to_provider.text
        authorize = str(to_provider.headers["location"])
        assert authorize.startswith(f"{idp.issuer}/auth?")  # found from the server's metadata, not configured
        query = parse_qs(urlsplit(authorize).query)
        assert query["resource"] == [f"{upstream.base}/mcp"]  # RFC 8707: the server's own resource
        assert query["scope"] == ["mcp:read"]  # the metadata's scopes_supported
        done = browser.go(authorize)
        assert isinstance(done, httpx2.Response)
        assert done.status_code == 200 and "Connected" in done.text, done.text
        answered = session.request("tools/call", WHO).result
        assert answered["structuredContent"] == {"user": "alice"}
        assert upstream.refused == 1  # the discovery's probe only: the call carried alice's token
        assert "subscriptions/listen" not in upstream.methods  # never opened with one user's token

        audience, upstream.accounts.audience = upstream.accounts.audience, "another-resource"
        try:  # the server no longer takes alice's token: it is forgotten and she is asked again
            assert elicitation_of(session.request("tools/call", WHO).error)["url"]
        finally:
            upstream.accounts.audience = audience
    finally:
        browser.close()
        mcp.close()


def test_an_answer_naming_another_authorization_server_is_refused(gateway: tuple[str, Protected], idp: Idp) -> None:
    """RFC 9207: the provider names itself (`iss`) in its answer; one naming another authorization server is a
    mix-up (a hostile server's authorization server relaying another's code), and the code is not exchanged."""
    base, _ = gateway
    mcp, session = open_session(f"{base}/mcp/notes")
    browser = Browser("carol")
    try:
        link = elicitation_of(session.request("tools/call", WHO).error)["url"]
        to_provider = browser.connect(link)
        authorize = f"{to_provider.headers['location']}&login_hint=carol"
        landed = browser.go(authorize, stop_at=f"{base}/elicitation/callback")
        assert isinstance(landed, str)
        answer = parse_qs(urlsplit(landed).query)
        assert answer["iss"] == [idp.issuer]  # oidc-provider names itself
        forged = landed.replace(f"iss={quote(idp.issuer, safe='')}", "iss=https%3A%2F%2Fmallory.example")
        assert forged != landed
        refused = browser.http.get(forged)
        assert refused.status_code == 502 and "another authorization server than the one asked" in refused.text
        assert elicitation_of(session.request("tools/call", WHO).error)["url"]  # nothing kept: asked again
    finally:
        browser.close()
        mcp.close()


def test_each_user_connects_their_own_account_and_one_registration_serves_all(
    gateway: tuple[str, Protected], idp: Idp
) -> None:
    base, _ = gateway
    mcp, session = open_session(f"{base}/mcp/notes")
    browser = Browser("bob")
    try:
        link = elicitation_of(session.request("tools/call", WHO).error)["url"]
        to_provider = browser.connect(link)
        done = browser.go(f"{to_provider.headers['location']}&login_hint=bob")  # bob logs in at the provider
        assert isinstance(done, httpx2.Response) and done.status_code == 200, done
        assert session.request("tools/call", WHO).result["structuredContent"] == {"user": "bob"}
    finally:
        browser.close()
        mcp.close()
    assert idp.stats()["registrations"] == 1  # the gateway's client, registered once for every user


def test_a_server_without_metadata_is_a_clear_error_on_the_connection_page(idp: Idp, tmp_path: Path) -> None:
    with protected_upstream(idp) as upstream:
        config = _config(upstream)
        with live_gateway_of(config, tmp_path) as base:
            upstream.base = "http://127.0.0.1:9"  # the metadata now claims another resource
            mcp, session = open_session(f"{base}/mcp/notes")
            try:
                link = elicitation_of(session.request("tools/call", WHO).error)["url"]
                origin = "{0.scheme}://{0.netloc}".format(urlsplit(link))
                page = httpx2.post(f"{link}/connect", headers={"Origin": origin}, timeout=30)
            finally:
                mcp.close()
    assert page.status_code == 502
    assert "protected-resource metadata names another resource" in page.text


def test_one_discovering_secret_on_two_servers_keeps_a_connection_per_server() -> None:
    """The finding: a discovering secret attached to two MCP services (the control plane allows it) was one key, so a
    user's token for one server was sent to the other, and the connection page connected to whichever came last."""
    from apimcp.elicitation.secrets import elicited_secret

    raw = {"id": "sec_1", "name": "account", "kind": "user_oauth", "fields": {"discover": True}}
    payroll = elicited_secret("acme", raw, "https://payroll.example/mcp")
    notes = elicited_secret("acme", raw, "https://notes.example/mcp")
    assert payroll.key != notes.key and payroll.key.startswith("acme/sec_1@")
    assert "example" not in payroll.key  # the key reaches clients (an input request's name); the URL never does
    assert payroll.oauth is not None and payroll.oauth.discover_from == "https://payroll.example/mcp"
    fixed = {"id": "sec_2", "name": "crm", "kind": "user_oauth", "fields": {"authorization_url": "https://a/auth",
             "token_url": "https://a/token", "client_id": "c"}}  # fmt: skip
    assert elicited_secret("acme", fixed, "https://payroll.example/mcp").key == "acme/sec_2"


def test_discovery_is_only_for_mcp_servers(tmp_path: Path) -> None:
    from apimcp.gateway.config import ConfigError, parse_config

    text = "services:\n  s:\n    openapi: x.yaml\n    credentials: {type: user_oauth, name: n}\n"
    with pytest.raises(ConfigError, match="only an MCP server's authorization server is discovered"):
        parse_config(text, "gateway.yaml", tmp_path)
    both = "services:\n  s:\n    mcp: http://h/mcp\n    credentials: {type: user_oauth, name: n, token_url: http://a}\n"
    with pytest.raises(ConfigError, match="give both authorization_url and token_url, or neither"):
        parse_config(both, "gateway.yaml", tmp_path)
    secret = "services:\n  s:\n    mcp: http://h/mcp\n    credentials: {type: user_oauth, name: n, client_id: c, " \
        "client_secret: {env: S}}\n"  # fmt: skip
    with pytest.raises(ConfigError, match="a discovered authorization server gets no client_secret"):
        parse_config(secret, "gateway.yaml", tmp_path)


def _connect_as(link: str, host: str) -> httpx2.Response:
    """Connect pressed on the page at `link` reached by the name `host`."""
    return httpx2.post(f"{link}/connect", headers={"Host": host, "Origin": f"http://{host}"}, timeout=30)


def test_a_gateway_without_a_public_url_connects_only_from_a_loopback_origin(tmp_path: Path) -> None:
    """The finding: without a public URL the callback was built from whatever Host the gateway admits, so a caller
    naming a host of its own (a wildcard admits it) had the gateway register that callback and send the user's
    authorization code there; replayed with the caller's cookie, the victim's token landed in the caller's store.
    Now such a Host is refused before anything is registered."""
    with running_idp() as provider, protected_upstream(provider) as upstream:
        # clients reach it by many names, and it was given no public URL
        config = _config(upstream, server='\n  allowed_hosts: ["*.example"]')
        with live_gateway_of(config, tmp_path) as base:
            mcp, session = open_session(f"{base}/mcp/notes")
            try:
                link = elicitation_of(session.request("tools/call", WHO).error)["url"]
                refused = [_connect_as(link, f"host-{n}.example") for n in range(3)]
                assert provider.stats()["registrations"] == 0
                # a loopback origin is this machine's: each one still costs a registration, so there are a few
                answers = [_connect_as(link, f"localhost:{n}").status_code for n in range(1, MAX_REDIRECT_URIS + 3)]
                capped = _connect_as(link, "127.0.0.1:1")
            finally:
                mcp.close()
        assert [answer.status_code for answer in refused] == [409, 409, 409]
        assert "does not know its public address" in refused[0].text
        assert answers == [303] * MAX_REDIRECT_URIS + [502, 502]
        assert "give the gateway its public URL" in capped.text
        assert provider.stats()["registrations"] == MAX_REDIRECT_URIS


def test_a_server_that_lists_nothing_without_a_token_is_imported_with_the_operator_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`import_credentials` read the server's lists at import; calls still carry each user's own token."""
    operator = client("operator", "operator-secret", grants=["client_credentials"])
    with running_idp([operator]) as provider, protected_upstream(provider) as upstream:
        upstream.public = ("server/discover", "initialize", "notifications/initialized")  # tools/list needs a token
        monkeypatch.setenv("APIMCP_TEST_OPERATOR_TOKEN", provider.token("operator", f"{upstream.base}/mcp"))
        config = _config(
            upstream, service="\n    import_credentials: {type: bearer, token: {env: APIMCP_TEST_OPERATOR_TOKEN}}"
        )
        with live_gateway_of(config, tmp_path) as base:
            mcp, session = open_session(f"{base}/mcp/notes")
            browser = Browser("alice")
            try:
                assert [t["name"] for t in session.request("tools/list").result["tools"]] == ["whoami"]
                link = elicitation_of(session.request("tools/call", WHO).error)["url"]  # calls need alice's own
                done = browser.go(str(browser.connect(link).headers["location"]))
                assert isinstance(done, httpx2.Response) and done.status_code == 200, done
                assert session.request("tools/call", WHO).result["structuredContent"] == {"user": "alice"}
            finally:
                browser.close()
                mcp.close()
        without = config.replace(
            "    import_credentials: {type: bearer, token: {env: APIMCP_TEST_OPERATOR_TOKEN}}\n", ""
        )
        with pytest.raises(ConfigError, match="HTTP 401"):  # what it would be without them
            plan_gateway(parse_config(without, "gateway.yaml", tmp_path))
