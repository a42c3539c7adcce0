"""Expositions as OAuth 2.1 resource servers, against a real authorization server (oidc-provider): tokens
checked by signature, issuer, expiry and audience, scopes per exposition and per tool, protected resource
metadata for every endpoint form (and for the HTTP+SSE transport at `.../sse`, the endpoint's), sessions bound to
their user."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.auth.conftest import (
    ECHO_SPEC,
    INTROSPECTOR,
    INTROSPECTOR_SECRET,
    SERVICE,
    live_oauth_gateway,
    oauth_config,
    static_clients,
)
from tests.support.idp import Idp, running_idp
from tests.support.mcp_http import McpHttp
from tests.support.processes import free_port


@pytest.fixture(scope="module")
def gateway(idp: Idp, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_oauth_gateway(oauth_config(idp.issuer), tmp_path_factory.mktemp("gw")) as base:
        yield base


def client(url: str, token: str | None) -> McpHttp:
    mcp = McpHttp(url)
    if token is not None:
        mcp.http.headers["authorization"] = f"Bearer {token}"
    return mcp


def challenge(reply_headers: httpx2.Headers) -> dict[str, str]:
    value = reply_headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    fields = {}
    for part in value[len("Bearer ") :].split(", "):
        key, _, quoted = part.partition("=")
        fields[key] = quoted.strip('"')
    return fields


def test_a_request_without_a_token_is_401_pointing_to_the_metadata(gateway: str, idp: Idp) -> None:
    with client(f"{gateway}/mcp/echo", None) as mcp:
        reply = mcp.modern("tools/list")
    assert reply.status == 401
    fields = challenge(reply.headers)
    assert fields["resource_metadata"] == f"{gateway}/.well-known/oauth-protected-resource/mcp/echo"
    assert fields["scope"] == "mcp:read"
    metadata = httpx2.get(fields["resource_metadata"]).json()
    assert metadata["resource"] == f"{gateway}/mcp/echo"
    assert metadata["authorization_servers"] == [idp.issuer]
    assert set(metadata["scopes_supported"]) == {"mcp:read", "mcp:write"}


def test_every_endpoint_form_has_its_metadata_naming_itself(gateway: str) -> None:
    for path in ("/mcp/echo", "/mcp/default/Echo+API/2.1"):
        metadata = httpx2.get(f"{gateway}/.well-known/oauth-protected-resource{path}")
        assert metadata.status_code == 200, path
        assert metadata.json()["resource"] == f"{gateway}{path}"
    assert httpx2.get(f"{gateway}/.well-known/oauth-protected-resource/mcp/nothing").status_code == 404


def test_a_token_issued_for_the_exposition_calls_it_in_both_eras(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", token) as mcp:
        modern = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "7"}})
        assert modern.status == 200, modern.text
        assert modern.result["structuredContent"]["path"] == "/v1/items/7"
        session = mcp.initialize()
        listed = session.request("tools/list")
        assert "get_item" in [t["name"] for t in listed.result["tools"]]


def test_the_client_s_token_never_reaches_the_backend(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", token) as mcp:
        echoed = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "7"}}).result
    headers = {k.lower(): v for k, v in echoed["structuredContent"]["headers"].items()}
    assert "authorization" not in headers
    assert token not in json.dumps(echoed)


def test_a_token_for_another_exposition_is_refused(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/other", "mcp:read")
    with client(f"{gateway}/mcp/echo", token) as mcp:
        reply = mcp.modern("tools/list")
    assert reply.status == 401
    assert challenge(reply.headers)["error"] == "invalid_token"
    assert "issued for another resource" in reply.text


VERSION_PATH = "/mcp/default/Echo+API/2.1"
"""The version URL of the echo service, which both expositions serve: it leads to `other`, the most recent (in a
configuration file, the larger id)."""


def test_a_token_for_the_version_url_does_not_open_an_older_exposition_of_the_service(gateway: str, idp: Idp) -> None:
    """Issue 21, M7: the version URL is an audience of the exposition it serves, not of every exposition of the
    service; at the older one's own URL the token is refused, with that URL's challenge."""
    token = idp.token(SERVICE, f"{gateway}{VERSION_PATH}", "mcp:read")
    for path in (VERSION_PATH, "/mcp/other"):
        with client(f"{gateway}{path}", token) as mcp:
            assert mcp.modern("tools/list").status == 200, path
    with client(f"{gateway}/mcp/echo", token) as mcp:
        reply = mcp.modern("tools/list")
    assert reply.status == 401
    fields = challenge(reply.headers)
    assert fields["error"] == "invalid_token"
    assert fields["resource_metadata"] == f"{gateway}/.well-known/oauth-protected-resource/mcp/echo"
    assert fields["scope"] == "mcp:read"
    assert "issued for another resource" in reply.text


def test_a_token_opens_only_the_exposition_its_audience_names(gateway: str, idp: Idp) -> None:
    """Issue 21, M7: every URL of one exposition against every URL of the other, both ways."""
    urls = {"echo": ["/mcp/echo"], "other": ["/mcp/other", VERSION_PATH]}
    outcomes = {}
    for owner, issued_for in urls.items():
        for audience in issued_for:
            token = idp.token(SERVICE, f"{gateway}{audience}", "mcp:read")
            for target, paths in urls.items():
                for path in paths:
                    with client(f"{gateway}{path}", token) as mcp:
                        outcomes[(audience, path)] = (mcp.modern("tools/list").status, owner == target)
    assert {key: status for key, (status, same) in outcomes.items()} == {
        key: 200 if same else 401 for key, (_, same) in outcomes.items()
    }


def test_a_token_without_the_exposition_s_scope_is_403_naming_it(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/echo", "backend:read")
    with client(f"{gateway}/mcp/echo", token) as mcp:
        reply = mcp.modern("tools/list")
    assert reply.status == 403
    fields = challenge(reply.headers)
    assert fields["error"] == "insufficient_scope"
    assert fields["scope"] == "mcp:read"


def test_a_tool_with_scopes_of_its_own_is_hidden_and_refused_without_them(gateway: str, idp: Idp) -> None:
    reader = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    writer = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read mcp:write")
    with client(f"{gateway}/mcp/echo", reader) as mcp:
        names = [t["name"] for t in mcp.modern("tools/list").result["tools"]]
        assert "delete_item" not in names
        assert "get_item" in names
        refused = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "1"}})
        assert refused.status == 403
        fields = challenge(refused.headers)
        assert (fields["error"], fields["scope"]) == ("insufficient_scope", "mcp:read mcp:write")
        session = mcp.initialize()
        in_session = session.request("tools/call", {"name": "delete_item", "arguments": {"itemId": "1"}})
        assert in_session.status == 403
        assert "needs the scope mcp:write" in in_session.error["message"]
    with client(f"{gateway}/mcp/echo", writer) as mcp:
        assert "delete_item" in [t["name"] for t in mcp.modern("tools/list").result["tools"]]
        assert mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "1"}}).status == 200


def test_a_tool_call_refused_403_for_its_scope_is_audited_as_403_insufficient_scope(
    gateway: str, idp: Idp, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    reader = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    marker = f"refused-{time.monotonic_ns()}"
    with client(f"{gateway}/mcp/echo", reader) as mcp:
        call = {"name": "delete_item", "arguments": {"itemId": marker}}
        assert mcp.modern("tools/call", call, request_id=marker).status == 403
        session = mcp.initialize()
        assert session.request("tools/call", call).status == 403
        session_id = session.id

    def refusals() -> list[dict[str, object]]:
        events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
        return [e for e in events if e["request_id"] == marker or e["session_id"] == session_id]

    for _ in range(500):  # an event is written once its answer is sent
        if len([e for e in refusals() if e["action"] == "tools/call"]) == 2:
            break
        time.sleep(0.01)
    calls = [e for e in refusals() if e["action"] == "tools/call"]
    assert [(e["revision"], e["outcome"], e["status"], e["reason"], e["error_code"]) for e in calls] == [
        ("2026-07-28", "refused", 403, "insufficient_scope", None),
        ("2025-11-25", "refused", 403, "insufficient_scope", None),
    ]


def _parts(token: str) -> list[str]:
    return token.split(".")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_tampered_signature_or_payload_is_refused(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    header, payload, signature = _parts(token)
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["scope"] = "mcp:read mcp:write"
    forged_payload = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    for forged in (forged_payload, f"{header}.{payload}.{flipped}"):
        with client(f"{gateway}/mcp/echo", forged) as mcp:
            reply = mcp.modern("tools/list")
        assert reply.status == 401
        assert "signature does not verify" in reply.text


def test_alg_none_and_hmac_with_the_public_key_are_refused(gateway: str, idp: Idp) -> None:
    token = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    _, payload, _ = _parts(token)
    none = f"{_b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{payload}."
    public = json.dumps(httpx2.get(f"{idp.issuer}/jwks").json()["keys"][0]).encode()
    hs_header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    mac = hmac.new(public, f"{hs_header}.{payload}".encode(), hashlib.sha256).digest()
    hs = f"{hs_header}.{payload}.{_b64(mac)}"
    for forged, alg in ((none, "none"), (hs, "HS256")):
        with client(f"{gateway}/mcp/echo", forged) as mcp:
            reply = mcp.modern("tools/list")
        assert reply.status == 401, alg
        assert f"signed with '{alg}', which is not accepted" in reply.text


def test_an_expired_token_is_refused(tmp_path: Path) -> None:
    with running_idp(static_clients(), ttl={"/mcp/": 3}) as short_lived:
        config = oauth_config(short_lived.issuer, oauth=", leeway_seconds: 0")
        with live_oauth_gateway(config, tmp_path) as base:
            token = short_lived.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
            with client(f"{base}/mcp/echo", token) as mcp:
                assert mcp.modern("tools/list").status == 200
                expiry = json.loads(base64.urlsafe_b64decode(_parts(token)[1] + "=="))["exp"]
                time.sleep(max(0.0, expiry - time.time()) + 0.2)
                reply = mcp.modern("tools/list")
    assert reply.status == 401
    assert "has expired" in reply.text


def test_a_key_the_gateway_has_not_seen_is_fetched_when_a_token_names_it(tmp_path: Path) -> None:
    """The provider restarts with new keys (a rotation): the first token signed with one makes the gateway fetch
    the key set again, and it is accepted."""
    port = free_port()
    with running_idp(static_clients(), port=port) as before:
        config = oauth_config(before.issuer)
        with live_oauth_gateway(config, tmp_path) as base:
            token = before.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
            with client(f"{base}/mcp/echo", token) as mcp:
                assert mcp.modern("tools/list").status == 200
            before.process.terminate()
            before.process.wait(5)
            with running_idp(static_clients(), port=port) as after:
                rotated = after.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
                assert _kid(rotated) != _kid(token)
                with client(f"{base}/mcp/echo", rotated) as mcp:
                    assert mcp.modern("tools/list").status == 200


def _kid(token: str) -> str:
    return str(json.loads(base64.urlsafe_b64decode(_parts(token)[0] + "=="))["kid"])


def test_a_session_opened_by_one_user_is_unknown_to_another(gateway: str, idp: Idp) -> None:
    first = idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", first) as mcp:
        session = mcp.initialize()
    other = idp.token(INTROSPECTOR, f"{gateway}/mcp/echo", "mcp:read")  # another client: another subject
    with client(f"{gateway}/mcp/echo", other) as mcp:
        reply = mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, session.headers())
    assert reply.status == 404
    with client(f"{gateway}/mcp/echo", first) as mcp:
        assert mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, session.headers()).status == 200


def test_opaque_tokens_are_checked_by_introspection(idp: Idp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider issues opaque tokens for resources naming `opaque` (see the idp fixture)."""
    monkeypatch.setenv("APIMCP_TEST_INTROSPECTION_SECRET", INTROSPECTOR_SECRET)
    config = f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}"}}
expositions:
  opaque:
    services: [echo]
    auth:
      oauth: {{issuers: ["{idp.issuer}"], scopes: [mcp:read]}}
      introspection: {{url: "{idp.issuer}/token/introspection", client_id: {INTROSPECTOR},
                      client_secret: {{env: APIMCP_TEST_INTROSPECTION_SECRET}}}}
  opaque-other:
    services: [echo]
    auth:
      oauth: {{issuers: ["{idp.issuer}"]}}
      introspection: {{url: "{idp.issuer}/token/introspection", client_id: {INTROSPECTOR},
                      client_secret: {{env: APIMCP_TEST_INTROSPECTION_SECRET}}}}
server: {{fetch_allow: [127.0.0.1]}}
"""
    with live_oauth_gateway(config, tmp_path) as base:
        token = idp.token(SERVICE, f"{base}/mcp/opaque", "mcp:read")
        assert not token.startswith("ey")  # not a JWT
        with client(f"{base}/mcp/opaque", token) as mcp:
            assert mcp.modern("tools/list").status == 200
        with client(f"{base}/mcp/opaque-other", token) as mcp:
            reply = mcp.modern("tools/list")
            assert reply.status == 401
            assert "issued for another resource" in reply.text
        with client(f"{base}/mcp/opaque", "not-a-token-the-provider-issued") as mcp:
            reply = mcp.modern("tools/list")
        assert reply.status == 401
        assert "is not active" in reply.text


def test_a_script_calls_tools_with_its_caller_s_scopes(idp: Idp, tmp_path: Path) -> None:
    """A scripted custom tool calls on its caller's behalf: a tool whose scope the caller lacks is refused to
    the script too."""
    (tmp_path / "tools.yaml").write_text("""
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: Echo API, version: "2.1"}
customTools:
  remove:
    description: Deletes an item through a script.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    tools: [{tool: delete_item}]
    script: |
      const answer = rs.callTool("delete_item", { itemId: input.id });
      return { ok: answer.ok, error: answer.error || null };
""")
    config = oauth_config(idp.issuer, extra_service=f"    artifacts: [{tmp_path / 'tools.yaml'}]")
    with live_oauth_gateway(config, tmp_path) as base:
        reader = idp.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
        writer = idp.token(SERVICE, f"{base}/mcp/echo", "mcp:read mcp:write")
        call = {"name": "remove", "arguments": {"id": "4"}}
        with client(f"{base}/mcp/echo", reader) as mcp:
            refused = mcp.modern("tools/call", call).result
        with client(f"{base}/mcp/echo", writer) as mcp:
            allowed = mcp.modern("tools/call", call).result
    assert "needs the scope mcp:write" in json.dumps(refused), refused
    assert allowed["structuredContent"]["ok"] is True, allowed


def test_the_host_is_checked_before_the_token_whose_audience_it_names(gateway: str, idp: Idp) -> None:
    """A token for another server's URL, replayed with that server's Host: refused by the DNS-rebinding check
    before the audience is built on it."""
    stolen = idp.token(SERVICE, "http://evil.example/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", stolen) as mcp:
        reply = mcp.modern("tools/list", headers={"host": "evil.example"})
    assert reply.status == 421
    assert httpx2.get(f"{gateway}/.well-known/oauth-protected-resource/mcp/echo",
                      headers={"host": "evil.example"}).status_code == 421  # fmt: skip


def test_a_token_for_another_local_server_is_refused_whatever_port_the_host_names(gateway: str, idp: Idp) -> None:
    """Issue 21, L2: without a public URL the audience is built on the Host, which the allow-list lets through for
    any `localhost:*` port; the port must be the one the gateway listens on, so a token issued for another MCP
    server of this machine, replayed with that server's Host, is refused."""
    port = int(gateway.rsplit(":", 1)[1])
    other = next(p for p in (port + 1, port - 1) if 0 < p < 65536)
    stolen = idp.token(SERVICE, f"http://localhost:{other}/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", stolen) as mcp:
        replayed = mcp.modern("tools/list", headers={"host": f"localhost:{other}"})
        assert replayed.status == 421
        assert f"names port {other}, and this request came in on port {port}" in replayed.text
        assert mcp.modern("tools/list", headers={"host": f"localhost:{port}"}).status == 401  # not this server's URL
    metadata = f"{gateway}/.well-known/oauth-protected-resource/mcp/echo"
    assert httpx2.get(metadata, headers={"host": f"localhost:{other}"}).status_code == 421
    assert httpx2.get(metadata, headers={"host": "localhost"}).status_code == 421  # port 80, by default
    own = idp.token(SERVICE, f"http://localhost:{port}/mcp/echo", "mcp:read")
    with client(f"{gateway}/mcp/echo", own) as mcp:
        assert mcp.modern("tools/list", headers={"host": f"localhost:{port}"}).status == 200


def test_a_declarative_tool_standing_for_a_scoped_tool_needs_its_scopes(idp: Idp, tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text("""
apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {name: Echo API, version: "2.1"}
customTools:
  remove_item:
    description: Deletes an item.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    tool: delete_item
    arguments: {itemId: "${id}"}
""")
    config = oauth_config(idp.issuer, extra_service=f"    artifacts: [{tmp_path / 'tools.yaml'}]")
    with live_oauth_gateway(config, tmp_path) as base:
        reader = idp.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
        with client(f"{base}/mcp/echo", reader) as mcp:
            refused = mcp.modern("tools/call", {"name": "remove_item", "arguments": {"id": "4"}}).result
    assert refused["isError"] is True
    assert "needs the scope mcp:write" in refused["content"][0]["text"]


def _first_event(url: str, token: str) -> tuple[int, list[str]]:
    """The status of `GET .../sse` and the stream's first event (its `endpoint`), or the refusal's body."""
    with httpx2.stream("GET", url, headers={"authorization": f"Bearer {token}"}, timeout=10) as stream:
        if stream.status_code != 200:
            return stream.status_code, [stream.read().decode()]
        lines = stream.iter_lines()
        return 200, [next(lines), next(lines)]


def test_http_sse_names_the_endpoint_in_its_metadata_and_challenges(gateway: str, idp: Idp) -> None:
    """The 2024-11-05 transport at `.../sse` and `.../messages` is the endpoint's: its challenges point to the
    endpoint's metadata, which names the endpoint, and tokens are issued for the endpoint's URL."""
    for path in ("/mcp/echo", "/mcp/default/Echo+API/2.1"):
        for refused in (httpx2.get(f"{gateway}{path}/sse"), httpx2.post(f"{gateway}{path}/messages?sessionId=x")):
            assert refused.status_code == 401, (path, refused.text)
            fields = challenge(refused.headers)
            assert fields["resource_metadata"] == f"{gateway}/.well-known/oauth-protected-resource{path}"
            assert httpx2.get(fields["resource_metadata"]).json()["resource"] == f"{gateway}{path}"
    status, event = _first_event(f"{gateway}/mcp/echo/sse", idp.token(SERVICE, f"{gateway}/mcp/echo", "mcp:read"))
    assert status == 200 and event[0] == "event: endpoint" and "/mcp/echo/messages?sessionId=" in event[1]
    wrong = idp.token(SERVICE, f"{gateway}/mcp/echo/sse", "mcp:read")  # not a resource the gateway serves
    status, body = _first_event(f"{gateway}/mcp/echo/sse", wrong)
    assert status == 401 and "issued for another resource" in body[0]
    assert httpx2.get(f"{gateway}/.well-known/oauth-protected-resource/mcp/echo/sse").status_code == 404


def test_a_step_up_challenge_names_every_scope_the_tool_needs_not_only_the_missing_ones(
    idp: Idp, tmp_path: Path
) -> None:
    """The finding: the challenge named the exposition's scopes and the missing ones only, so a client that asked for
    exactly those lost the tool scope it had, and was challenged for it next: for ever."""
    config = oauth_config(idp.issuer).replace("delete_item: [mcp:write]", "delete_item: [mcp:write, books:write]")
    with live_oauth_gateway(config, tmp_path) as base:
        for held in ("mcp:read mcp:write", "mcp:read books:write"):
            token = idp.token(SERVICE, f"{base}/mcp/echo", held)
            with client(f"{base}/mcp/echo", token) as mcp:
                refused = mcp.modern("tools/call", {"name": "delete_item", "arguments": {"itemId": "1"}})
            assert refused.status == 403
            assert challenge(refused.headers)["scope"] == "mcp:read books:write mcp:write"


def test_keys_that_cannot_be_fetched_are_a_503_to_retry_naming_no_internal_host(tmp_path: Path) -> None:
    """The finding: a 401 invalid_token whose description named the key set's host and the gateway's fetch settings:
    clients threw good tokens away, and learnt the gateway's internals."""
    with running_idp(static_clients()) as gone, live_oauth_gateway(oauth_config(gone.issuer), tmp_path) as base:
        token = gone.token(SERVICE, f"{base}/mcp/echo", "mcp:read")
        gone.process.terminate()
        gone.process.wait(5)
        with client(f"{base}/mcp/echo", token) as mcp:
            reply = mcp.modern("tools/list")
    assert (reply.status, reply.headers.get("retry-after")) == (503, "5")
    assert "try again shortly" in reply.text and "127.0.0.1" not in reply.text and "fetch" not in reply.text
