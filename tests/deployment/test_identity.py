"""Identity through the control plane (REST API and CLI) in one process with its gateway: an OAuth-protected
plan against a real authorization server, its audit trail queried back, secret references resolved by the
gateway, and per-user credentials."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.auth.conftest import INTROSPECTOR, INTROSPECTOR_SECRET, SERVICE, static_clients
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.gateway.echo_backend import digest
from tests.support.idp import Idp, running_idp
from tests.support.mcp_http import McpHttp


@pytest.fixture(scope="module")
def idp() -> Iterator[Idp]:
    with running_idp(static_clients(), opaque=["opaque"]) as provider:
        yield provider


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        yield running


def events(live: Deployment, expected: int, **query: Any) -> list[dict[str, Any]]:
    """The audit events the control plane lists, once at least `expected` arrived (gateways report each second)."""
    found: list[dict[str, Any]] = []

    def arrived() -> bool:
        found[:] = live.api.call("GET", "/audit", params=query)
        return len(found) >= expected

    wait_until(arrived)
    return found


def test_an_oauth_plan_takes_the_provider_s_tokens_and_audits_every_request(live: Deployment, idp: Idp) -> None:
    introspection = live.api.call("POST", "/secrets", 201, json={
        "name": "introspection", "kind": "oauth_introspection",
        "fields": {"url": f"{idp.issuer}/token/introspection", "client_id": INTROSPECTOR},
        "values": {"client_secret": INTROSPECTOR_SECRET},
    })  # fmt: skip
    service = live.api.import_echo()
    oauth = {"issuers": [idp.issuer], "scopes": ["mcp:read"], "tool_scopes": {"delete_item": ["mcp:write"]}}
    plan, _ = live.api.expose(
        service["id"], live.backend, "opaque-echo", inbound_mode="oauth", oauth=oauth,
        introspection_secret_id=introspection["id"], audit=True, header_policy={"allow": ["x-tenant"]},
    )  # fmt: skip
    assert (plan["inbound_mode"], plan["oauth"]["issuers"], plan["audit"]) == ("oauth", [idp.issuer], True)
    assert plan["header_policy"] == {"allow": ["x-tenant"]}
    assert plan["introspection_secret_id"] == introspection["id"]
    url = f"{live.base}/mcp/default/opaque-echo".replace("//localhost:", "//127.0.0.1:")
    wait_until(lambda: live.served("/mcp/default/opaque-echo"))

    refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    metadata = httpx2.get(url.replace("/mcp/", "/.well-known/oauth-protected-resource/mcp/")).json()
    assert metadata["authorization_servers"] == [idp.issuer]

    token = idp.token(SERVICE, url, "mcp:read")  # opaque: the resource names "opaque", checked by introspection
    assert not token.startswith("ey")
    with McpHttp(url) as mcp:
        mcp.http.headers["authorization"] = f"Bearer {token}"
        listed = mcp.modern("tools/list").result["tools"]
        assert "delete_item" not in [t["name"] for t in listed]
        echoed = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "3"}},
                            headers={"x-tenant": "acme", "x-other": "no"}).result  # fmt: skip
    headers = {k.lower(): v for k, v in echoed["structuredContent"]["headers"].items()}
    assert headers["x-tenant"] == "acme"
    assert "x-other" not in headers and "authorization" not in headers

    audited = list(reversed(events(live, 4, exposition="opaque-echo")))  # oldest first
    refusals = audited[:-2]  # the harness's wait for the exposition, and the ping above
    assert [(e["action"], e["outcome"], e["reason"]) for e in refusals] == [
        ("authentication", "failure", "missing_bearer_token")
    ] * len(refusals)
    assert len(refusals) >= 2
    assert [(e["action"], e["target"], e["outcome"]) for e in audited[-2:]] == [
        ("tools/list", None, "success"),
        ("tools/call", "get_item", "success"),
    ]
    assert audited[-1]["user"] == f"{idp.issuer} client={SERVICE}"  # introspected: no subject, the client calls
    assert token not in json.dumps(audited)


def test_a_secret_reference_is_resolved_by_the_gateway_at_each_call(
    live: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = live.api.http.post("/secrets", json={"name": "vaulted", "kind": "bearer",
                                                   "values": {"token": "${vault:secret/echo}"}})  # fmt: skip
    assert refused.status_code == 422
    assert "only ${env:NAME} is" in refused.json()["detail"]
    gateway_own = live.api.http.post("/secrets", json={"name": "theirs", "kind": "bearer",
                                                       "values": {"token": "${env:APIMCP_GATEWAY_TOKEN}"}})  # fmt: skip
    assert gateway_own.status_code == 422
    assert "may name variables called APIMCP_SECRET_default__" in gateway_own.json()["detail"]
    secret = live.api.call("POST", "/secrets", 201, json={
        "name": "from-env", "kind": "api_key", "fields": {"name": "X-Echo-Key"},
        "values": {"value": "${env:APIMCP_SECRET_default__ECHO_KEY}"},
    })  # fmt: skip
    service = live.api.import_echo()
    live.api.expose(service["id"], live.backend, "echo", include=["secured"], secret_id=secret["id"])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))

    def call() -> dict[str, Any]:
        with McpHttp(url) as mcp:
            return dict(mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result)

    monkeypatch.delenv("APIMCP_SECRET_default__ECHO_KEY", raising=False)
    missing = call()
    assert missing["isError"] is True
    assert "${env:APIMCP_SECRET_default__ECHO_KEY}, which is not set on this gateway" in missing["content"][0]["text"]
    monkeypatch.setenv("APIMCP_SECRET_default__ECHO_KEY", "first-value")
    assert call()["structuredContent"]["header_digests"]["X-Echo-Key"] == digest("first-value")
    monkeypatch.setenv("APIMCP_SECRET_default__ECHO_KEY", "second-value")  # no snapshot needed: read at each call
    assert call()["structuredContent"]["header_digests"]["X-Echo-Key"] == digest("second-value")


def test_a_user_token_secret_asks_each_session_for_its_own(live: Deployment) -> None:
    secret = live.api.call("POST", "/secrets", 201, json={
        "name": "echo-user", "kind": "user_token", "fields": {"header": "X-Echo-Key", "scheme": ""}, "values": {},
    })  # fmt: skip
    service = live.api.import_echo()
    live.api.expose(service["id"], live.backend, "echo", include=["secured"], secret_id=secret["id"])
    url = f"{live.base}/mcp/default/echo".replace("//localhost:", "//127.0.0.1:")
    wait_until(lambda: live.served("/mcp/default/echo"))
    with McpHttp(url) as mcp:
        session = mcp.initialize(capabilities={"elicitation": {"url": {}}})
        asked = session.request("tools/call", {"name": "secured", "arguments": {}}).error
        assert asked["code"] == -32042
        link = asked["data"]["elicitations"][0]["url"]
        assert httpx2.post(link, data={"token": "my-own-key"}).status_code == 200
        answered = session.request("tools/call", {"name": "secured", "arguments": {}}).result
    assert answered["structuredContent"]["header_digests"]["X-Echo-Key"] == digest("my-own-key")


def test_the_cli_sets_oauth_header_policy_and_audit_and_shows_the_trail(live: Deployment, idp: Idp) -> None:
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")

    def run(*args: str) -> str:
        result = CliRunner().invoke(app, list(args))
        assert result.exit_code == 0, (args, result.output)
        return result.output

    run("login", live.base, "--token", token)
    service = live.api.import_echo()
    live.api.expose(service["id"], live.backend, "echo")
    run("plan", "update", "echo", "--issuer", idp.issuer, "--scope", "mcp:read", "--tool-scope",
        "delete_item=mcp:write", "--audit", "--header-policy", '{"allow": ["x-tenant"]}')  # fmt: skip
    plan = json.loads(run("plan", "show", "echo", "-o", "json"))
    assert plan["inbound_mode"] == "oauth"
    assert plan["oauth"]["tool_scopes"] == {"delete_item": ["mcp:write"]}
    assert plan["audit"] is True
    run("plan", "update", "echo", "--scope", "mcp:use")  # changes the scopes, keeps the rest
    plan = json.loads(run("plan", "show", "echo", "-o", "json"))
    assert (plan["oauth"]["scopes"], plan["oauth"]["issuers"]) == (["mcp:use"], [idp.issuer])
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: httpx2.post(url, json={}).status_code == 401)
    events(live, 1)
    shown = json.loads(run("audit", "--limit", "5", "-o", "json"))
    assert shown[0]["action"] == "authentication"
    assert shown[0]["reason"] == "missing_bearer_token"
    assert "TIME" in run("audit", "--exposition", "echo")
