"""Single sign-on through a real OpenID provider (oidc-provider): a person an admin invited signs in through the
control plane (authorization code with PKCE, the ID token checked), joins, and redeems a one-time code for a token
that acts with their role; the console and the CLI's loopback get the code; every way it can go wrong is said."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

from apimcp.cli import sso_login
from apimcp.cli.main import app
from apimcp.sso.settings import SsoSettings
from tests.control.api_harness import Api, created, ok, problem
from tests.support.idp import Browser, client, running_idp

CLIENT_ID = "apimcp-console"


@pytest.fixture
def sso(api: Api) -> Iterator[Api]:
    """`api` with single sign-on through a provider that knows its callback (a public client: PKCE alone)."""
    callback = f"{api.base}/api/v1/sso/callback"
    with running_idp([client(CLIENT_ID, None, grants=["authorization_code"], redirect_uris=[callback])]) as idp:
        api.plane.sso = SsoSettings(issuer=idp.issuer, client_id=CLIENT_ID)
        try:
            yield api
        finally:
            api.plane.sso = None


def _sign_in(api: Api, user: str, **start: str) -> dict[str, str]:
    """`user` signs in from the console (or the CLI, with `port`): what comes back after the fragment or query."""
    query = "&".join(f"{k}={v}" for k, v in {"client": "console", **start}.items())
    browser = Browser(user)
    try:
        back = "http://127.0.0.1:" + start["port"] if "port" in start else f"{api.base}/console/"
        landed = browser.go(f"{api.base}/api/v1/sso/start?{query}&login_hint={user}", stop_at=back)
    finally:
        browser.close()
    assert isinstance(landed, str), landed
    parts = urlsplit(landed)
    said = parts.query if "port" in start else parts.fragment.partition("?")[2]
    return {key: values[0] for key, values in parse_qs(said).items()}


def test_an_invited_person_signs_in_and_acts_with_their_role(sso: Api) -> None:
    acme = sso.org("acme-sso")
    assert ok(sso.client().get("/sso")) == {"enabled": True, "issuer": sso.plane.sso.issuer if sso.plane.sso else ""}
    invited = created(acme.user.post("/invitations", json={"email": "alice@example.test", "role": "editor"}))
    assert invited["email"] == "alice@example.test"

    back = _sign_in(sso, "alice")
    assert set(back) == {"code"}, back
    signed = ok(sso.client().post("/sso/session", json={"code": back["code"]}))
    assert signed["email"] == "alice@example.test" and signed["organization"] == "acme-sso"
    assert signed["role"] == "editor"
    alice = sso.client(signed["token"])
    me = ok(alice.get("/me"))
    assert me["user"]["email"] == "alice@example.test" and me["role"] == "editor"
    problem(alice.post("/tokens", json={"name": "mine", "kind": "admin"}), 403)  # an editor is no admin
    problem(sso.client().post("/sso/session", json={"code": back["code"]}), 409)  # a code works once

    again = _sign_in(sso, "alice")  # the second time, the same person: no invitation needed
    assert ok(sso.client().post("/sso/session", json={"code": again["code"]}))["email"] == "alice@example.test"
    members = ok(acme.user.get("/members"))
    assert [(m["user"]["email"], m["role"]) for m in members] == [("alice@example.test", "editor")]


def test_the_cli_gets_its_code_on_its_loopback_port(sso: Api) -> None:
    acme = sso.org("acme-sso-cli")
    created(acme.user.post("/invitations", json={"email": "bob@example.test", "role": "viewer"}))
    back = _sign_in(sso, "bob", client="cli", port="54321")
    signed = ok(sso.client().post("/sso/session", json={"code": back["code"]}))
    assert signed["role"] == "viewer"


def test_what_goes_wrong_is_said(sso: Api) -> None:
    sso.org("acme-sso-refusals")
    nobody = _sign_in(sso, "mallory")
    assert "mallory@example.test is in no organization here" in nobody["error"]
    elsewhere = sso.org("acme-sso-other")
    created(elsewhere.user.post("/invitations", json={"email": "carol@example.test", "role": "viewer"}))
    assert (
        "not a member of organization 'acme-sso-refusals'"
        in _sign_in(sso, "carol", organization="acme-sso-refusals")["error"]
    )
    forged = sso.client().get("/sso/callback", params={"code": "x", "state": "not-sealed-here"})
    assert forged.status_code == 302 and "start+again" in forged.headers["location"]
    problem(sso.client().post("/sso/session", json={"code": "apimcp_signin_nope"}), 404)
    problem(sso.client().get("/sso/start", params={"client": "cli"}), 409, "port")


def test_without_a_provider_sign_in_is_off(api: Api) -> None:
    assert ok(api.client().get("/sso")) == {"enabled": False, "issuer": None}
    problem(api.client().get("/sso/start"), 404)


def test_apimcp_login_sso_signs_a_person_in_through_a_loopback_port(sso: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    acme = sso.org("acme-sso-login")
    created(acme.user.post("/invitations", json={"email": "dave@example.test", "role": "admin"}))
    opened: list[str] = []

    def browse(url: str) -> bool:  # the person's browser, following the sign-in to the CLI's loopback port
        opened.append(url)
        browser = Browser("dave")
        threading.Thread(target=lambda: (browser.go(f"{url}&login_hint=dave"), browser.close()), daemon=True).start()
        return True

    monkeypatch.setattr(sso_login.webbrowser, "open", browse)
    result = CliRunner().invoke(app, ["login", sso.base, "--sso"])
    assert result.exit_code == 0, result.output
    assert opened and opened[0].startswith(f"{sso.base}/api/v1/sso/start?client=cli&port=")
    assert "Signed in as dave@example.test (admin of acme-sso-login)" in result.output
    whoami = CliRunner().invoke(app, ["whoami"])
    assert whoami.exit_code == 0 and "acme-sso-login" in whoami.output, whoami.output

    refused = CliRunner().invoke(app, ["login", sso.base, "--sso", "--token", "x"])
    assert refused.exit_code == 2 and "give it no --token" in refused.output


def test_signing_in_adopts_a_person_invited_before_and_revokes_the_tokens_their_code_gave(sso: Api) -> None:
    """Whoever used an invitation's code alone (the inviting admin, say) holds the token it gave: once the person
    signs in, that token must not act as them, here or in the organizations they join later."""
    acme, beta = sso.org("acme-adopt"), sso.org("beta-adopt")
    code = created(acme.user.post("/invitations", json={"email": "alice@example.test", "role": "viewer"}))["code"]
    by_code = ok(sso.client().post("/invitations/accept", json={"code": code}))["token"]
    ok(sso.client(by_code).get("/me"))
    back = _sign_in(sso, "alice")
    signed = ok(sso.client().post("/sso/session", json={"code": back["code"]}))
    assert (signed["email"], signed["organization"], signed["role"]) == ("alice@example.test", "acme-adopt", "viewer")
    problem(sso.client(by_code).get("/me"), 401)
    alice = sso.client(signed["token"])
    code = created(beta.user.post("/invitations", json={"email": "alice@example.test", "role": "admin"}))["code"]
    ok(alice.post("/invitations/accept", json={"code": code}))
    assert ok(alice.get("/me", headers={"X-Organization": "beta-adopt"}))["role"] == "admin"
    problem(sso.client(by_code).get("/me", headers={"X-Organization": "beta-adopt"}), 401)


def test_a_sign_in_ends_only_in_the_browser_that_started_it(sso: Api) -> None:
    """Mallory starts a sign-in and sends her callback link to Alice: in Alice's browser (without the start's cookie)
    it signs nobody in."""
    mallory = Browser("mallory")
    try:
        landed = mallory.go(f"{sso.base}/api/v1/sso/start?client=console&login_hint=mallory",
                            stop_at=f"{sso.base}/api/v1/sso/callback")  # fmt: skip
    finally:
        mallory.close()
    assert isinstance(landed, str) and "code=" in landed
    alice = Browser("alice")
    try:
        back = alice.go(landed, stop_at=f"{sso.base}/console/")
    finally:
        alice.close()
    assert isinstance(back, str)
    said = {key: values[0] for key, values in parse_qs(urlsplit(back).fragment.partition("?")[2]).items()}
    assert said == {"error": "this sign-in was started in another browser: start it again here"}
