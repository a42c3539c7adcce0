"""Connecting a user's account: the OAuth 2.0 authorization code grant with PKCE (RFC 7636) and `state`, and
refreshing what it gave.

The code verifier and `state` are drawn per connection and kept on the server (in the pending elicitation);
the browser carries only the S256 challenge and the state. Token requests go through the guarded token
session, like every exchange the gateway makes on someone's behalf.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any
from urllib.parse import urlencode

from apimcp.backends.oauth_client import access_token_of, token_lifetime
from apimcp.backends.oauth_http import CredentialError, TokenClient, basic_authorization, host_of, post_form
from apimcp.backends.secret_refs import UnresolvedReference, resolve
from apimcp.elicitation.secrets import OAuthClient


def challenge_of(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorization_url(client: OAuthClient, redirect_uri: str, state: str, verifier: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge_of(verifier),
        "code_challenge_method": "S256",
    }
    if client.scopes:
        params["scope"] = " ".join(client.scopes)
    if client.resource:
        params["resource"] = client.resource
    separator = "&" if "?" in client.authorization_url else "?"
    return client.authorization_url + separator + urlencode(params)


async def _token_request(session: TokenClient, client: OAuthClient, form: dict[str, str]) -> dict[str, Any]:
    authorization = None
    try:
        client_secret = resolve(client.client_secret) if client.client_secret else None
    except UnresolvedReference as exc:
        raise CredentialError(str(exc)) from None
    if client_secret:
        authorization = basic_authorization(client.client_id, client_secret)
    else:
        form["client_id"] = client.client_id  # a public client
    secrets = tuple(s for s in (client_secret, form.get("code"), form.get("refresh_token")) if s)
    body = await post_form(
        session, client.token_url, form, "token endpoint", authorization=authorization, secrets=secrets
    )
    token = access_token_of(body, f"token endpoint at {host_of(client.token_url)}")
    value: dict[str, Any] = {"token": token, "expires_at": time.time() + token_lifetime(body)}
    refresh = body.get("refresh_token")
    if isinstance(refresh, str) and refresh:
        value["refresh_token"] = refresh
    return value


async def exchange_code(
    session: TokenClient, client: OAuthClient, code: str, verifier: str, redirect_uri: str
) -> dict[str, Any]:
    """What the user's connection gives: `{token, expires_at, refresh_token?}`."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier}
    if client.resource:
        form["resource"] = client.resource
    return await _token_request(session, client, form)


async def refresh(session: TokenClient, client: OAuthClient, refresh_token: str) -> dict[str, Any]:
    """A new access token for a connection; keeps the refresh token when the server sends no new one."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if client.resource:
        form["resource"] = client.resource
    value = await _token_request(session, client, form)
    value.setdefault("refresh_token", refresh_token)
    return value


__all__ = ["CredentialError", "authorization_url", "challenge_of", "exchange_code", "refresh"]
