"""Single sign-on: the console and `apimcp login --sso` send people here; the control plane, an OpenID Connect
client of the company's provider, sends them on with a PKCE challenge and brings them back with a one-time code
for their token (`control.domain.sign_ins`)."""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, Field

from apimcp.control.api.auth import DbSession, Plane, signing_in
from apimcp.control.domain import sign_ins, tokens
from apimcp.control.errors import Conflict, DomainError, NotFound
from apimcp.sso import pkce
from apimcp.sso.id_tokens import IdTokenError, has_email, person_of, verified_claims
from apimcp.sso.provider import Provider, ProviderError
from apimcp.sso.state import LIFETIME_SECONDS, SignIn, StateError, open_state, seal

router = APIRouter(prefix="/sso", tags=["sign-in"], dependencies=[Depends(signing_in)])
BROWSER_COOKIE = "apimcp_sign_in"
"""Set by the start, read by the callback: a sign-in finishes only in the browser that began it (else anyone could
send a person the link that ends their own sign-in, and have them work as someone else: login CSRF)."""


class SsoView(BaseModel):
    enabled: bool
    issuer: str | None = None


class Redeem(BaseModel):
    code: str = Field(min_length=1, max_length=200, description="the one-time code the sign-in handed back")


class SignedIn(BaseModel):
    token: str = Field(description="a token of the person in the organization (shown this once)")
    email: str
    organization: str
    role: str


def _provider(plane: Plane) -> Provider:
    provider = plane.sign_in_provider
    if provider is None:
        raise NotFound("single sign-on is not set up on this control plane (APIMCP_SSO_ISSUER)")
    return provider


def _redirect_uri(plane: Plane, request: Request) -> str:
    assert plane.sso is not None
    return plane.sso.redirect_uri or str(request.url_for("sso_callback"))


@router.get("", response_model=SsoView)
def sso(plane: Plane) -> SsoView:
    """Whether people may sign in through the company's provider (the console shows the button when so)."""
    return SsoView(enabled=plane.sso is not None, issuer=plane.sso.issuer if plane.sso else None)


@router.get("/start", response_class=RedirectResponse, status_code=302)
async def start(
    request: Request,
    plane: Plane,
    client: Literal["console", "cli"] = "console",
    port: Annotated[int | None, Query(ge=1024, le=65535, description="the CLI's loopback port")] = None,
    organization: Annotated[str | None, Query(max_length=100)] = None,
    login_hint: Annotated[str | None, Query(max_length=254)] = None,
    tab: Annotated[str | None, Query(max_length=64, pattern="^[A-Za-z0-9_-]+$")] = None,
) -> RedirectResponse:
    """To the provider's authorization endpoint: authorization code flow with PKCE (S256) and a nonce; the state,
    sealed with the control plane's keys, carries the verifier and where to go back."""
    provider = _provider(plane)
    if (client == "cli") != (port is not None):
        raise Conflict("the CLI names its loopback port, and only the CLI does", field="port")
    try:
        metadata = await provider.metadata()
    except ProviderError as exc:
        raise Conflict(f"the provider cannot be reached: {exc}") from None
    verifier, nonce, browser = pkce.verifier(), secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    state = seal(
        plane.keys, SignIn(verifier, nonce, client, port, organization, browser=tokens.digest(browser), tab=tab)
    )
    query = {
        "response_type": "code",
        "client_id": provider.settings.client_id,
        "redirect_uri": _redirect_uri(plane, request),
        "scope": " ".join(provider.settings.scopes),
        "state": state,
        "nonce": nonce,
        "code_challenge": pkce.challenge(verifier),
        "code_challenge_method": "S256",
    }
    if login_hint:
        query["login_hint"] = login_hint
    response = RedirectResponse(f"{metadata.authorization_endpoint}?{urlencode(query)}", status_code=302)
    response.set_cookie(BROWSER_COOKIE, browser, max_age=LIFETIME_SECONDS, path=_cookie_path(request), httponly=True,
                        samesite="lax", secure=request.url.scheme == "https")  # fmt: skip
    return response


def _cookie_path(request: Request) -> str:
    """The sign-in routes' own path (`.../sso/`), so that the cookie goes nowhere else."""
    return request.url.path.rsplit("/", 1)[0] + "/"


def _back(request: Request, sign_in: SignIn | None, **said: str) -> RedirectResponse:
    """To the console's sign-in screen, or the CLI's loopback, with the code or the reason it failed."""
    if sign_in is not None and sign_in.client == "cli" and sign_in.port is not None:
        response = RedirectResponse(f"http://127.0.0.1:{sign_in.port}/callback?{urlencode(said)}", status_code=302)
    else:
        if sign_in is not None and sign_in.tab is not None:
            said = {**said, "tab": sign_in.tab}
        console = f"{str(request.base_url).rstrip('/')}/console/"
        response = RedirectResponse(f"{console}#/signed-in?{urlencode(said)}", status_code=302)
    response.delete_cookie(BROWSER_COOKIE, path=_cookie_path(request))
    return response


@router.get("/callback", name="sso_callback", response_class=RedirectResponse, status_code=302)
async def callback(
    request: Request,
    plane: Plane,
    session: DbSession,
    code: Annotated[str | None, Query(max_length=2048)] = None,
    state: Annotated[str | None, Query(max_length=4096)] = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
) -> RedirectResponse:
    """Where the provider sends the person back: the code exchanged (with the verifier), the ID token checked, the
    person found (or made) and their organization chosen; then back to the console or the CLI with a one-time
    code for their token, or with the reason it failed."""
    provider = _provider(plane)
    try:
        sign_in = open_state(plane.keys, state or "")
    except StateError as exc:
        return _back(request, None, error=str(exc))
    cookie = request.cookies.get(BROWSER_COOKIE)
    if not cookie or not secrets.compare_digest(tokens.digest(cookie), sign_in.browser):
        return _back(request, None, error="this sign-in was started in another browser: start it again here")
    if error is not None or code is None:
        return _back(request, sign_in, error=f"the provider did not sign you in ({error or 'no code'})")
    try:
        answer: dict[str, Any] = dict(await provider.exchange(code, sign_in.verifier, _redirect_uri(plane, request)))
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise IdTokenError("the provider answered no ID token (is openid among the client's scopes?)")
        # the issuer as the provider's metadata writes it (`https://tenant.auth0.com/`, its final slash included)
        issuer = (await provider.metadata()).issuer
        client_id, nonce = provider.settings.client_id, sign_in.nonce
        try:
            claims = verified_claims(id_token, await provider.keys(), issuer, client_id, nonce)
        except IdTokenError:  # the provider may have rotated its keys since they were read: once more, afresh
            keys = await provider.keys(refresh=True)
            claims = verified_claims(id_token, keys, issuer, client_id, nonce)
        access_token = answer.get("access_token")
        userinfo = None
        if not has_email(claims) and isinstance(access_token, str):
            userinfo = await provider.userinfo(access_token)
        person = person_of(claims, userinfo)
        user, organization = sign_ins.signed_in(session, person, sign_in.organization)
        handed = sign_ins.handoff(session, user, organization)
    except (ProviderError, IdTokenError, DomainError) as exc:
        return _back(request, sign_in, error=str(exc))
    return _back(request, sign_in, code=handed)


@router.post("/session", response_model=SignedIn)
def redeem(body: Redeem, session: DbSession) -> SignedIn:
    """The token a sign-in's one-time code is worth, once, within a minute."""
    token, user, organization, role = sign_ins.redeem(session, body.code)
    return SignedIn(token=token, email=user.email, organization=organization.name, role=role)
