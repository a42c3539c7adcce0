"""Signing in to the console through the company's OpenID provider (oidc-provider, the identity tests' own), in
Chromium: the button appears, the provider signs alice in (authorization code with PKCE, through the control
plane), she lands in the organization that invited her as an editor, and the console refuses her an admin action
in the API's words; a sign-in nobody was invited for comes back to the login form with the reason."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx2
import pytest
from playwright.sync_api import Page, expect

from apimcp.control.plane import ControlPlane
from apimcp.embedded import EmbeddedApp, embedded
from apimcp.protocol import EndpointOptions
from apimcp.sso.settings import SsoSettings
from tests.browser.conftest import Seen, open_screen, unexpected
from tests.support.idp import client, running_idp
from tests.support.live_server import live_app

CLIENT_ID = "apimcp-console"


@dataclass
class Signing:
    base: str
    token: str
    plane: ControlPlane


@pytest.fixture(scope="module")
def signing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Signing]:
    """`apimcp serve` whose people sign in through a real provider that knows its callback."""
    found: dict[str, object] = {}

    @asynccontextmanager
    async def app() -> AsyncIterator[EmbeddedApp]:
        async with embedded(tmp_path_factory.mktemp("sso"), database_url=None, options=EndpointOptions()) as started:
            found["token"], found["plane"] = started.bootstrap_token, started.plane
            yield started.app

    with live_app(app) as base:
        port = base.rsplit(":", 1)[1]
        callbacks = [f"http://{host}:{port}/api/v1/sso/callback" for host in ("localhost", "127.0.0.1")]
        with running_idp([client(CLIENT_ID, None, grants=["authorization_code"], redirect_uris=callbacks)]) as idp:
            plane = found["plane"]
            assert isinstance(plane, ControlPlane)
            plane.sso = SsoSettings(issuer=idp.issuer, client_id=CLIENT_ID)
            yield Signing(base, str(found["token"]), plane)


def test_alice_signs_in_as_the_editor_she_was_invited_as(page: Page, signing: Signing, seen: Seen) -> None:
    with httpx2.Client(base_url=f"{signing.base}/api/v1", headers={"Authorization": f"Bearer {signing.token}"}) as api:
        invited = api.post("/invitations", json={"email": "alice@example.test", "role": "editor"})
        assert invited.status_code == 201, invited.text

    page.goto(f"{signing.base}/console/")
    page.get_by_role("button", name="Sign in with single sign-on").click()  # the provider signs in its first account
    expect(page.get_by_role("heading", level=1, name="Traffic")).to_be_visible()
    expect(page.get_by_text("editor · alice@example.test")).to_be_visible()
    assert "code=" not in page.url  # the one-time code does not stay in the address
    token = page.evaluate("sessionStorage.getItem('apimcp.console.token')")
    assert token and token.startswith("apimcp_")

    open_screen(page, "Access")
    page.get_by_label("Token name").fill("escalate")
    page.get_by_label("Token kind").select_option("admin")
    page.get_by_role("button", name="Create the token").click()
    expect(page.get_by_role("alert")).to_contain_text("admin")
    assert unexpected(seen.problems, 403) == []


def test_a_person_nobody_invited_is_told_so(page: Page, signing: Signing) -> None:
    page.goto(f"{signing.base}/console/")
    page.evaluate("sessionStorage.setItem('apimcp.signInTab', 'tab1')")  # as the button does, with a login hint
    page.goto(f"{signing.base}/api/v1/sso/start?client=console&tab=tab1&login_hint=mallory")
    expect(page.get_by_role("alert")).to_contain_text("mallory@example.test is in no organization here")
    expect(page.get_by_label("API token")).to_be_visible()


def test_a_sign_in_link_this_tab_did_not_start_is_ignored(page: Page, signing: Signing) -> None:
    """Someone's own sign-in, ended in another's browser, would have them work as that someone (login CSRF); and a
    link's error text is no message of the console's."""
    page.goto(f"{signing.base}/console/#/signed-in?error=your+token+was+revoked:+copy+a+new+one+from+evil.example")
    expect(page.get_by_role("alert")).to_contain_text("A sign-in this tab did not start was ignored")
    expect(page.get_by_text("evil.example")).to_have_count(0)
    page.goto("about:blank")  # a fragment alone would not load the console again
    page.goto(f"{signing.base}/console/#/signed-in?code=apimcp_signin_someone-elses&tab=guessed")
    expect(page.get_by_role("alert")).to_contain_text("A sign-in this tab did not start was ignored")
