"""Backend access tokens by the OAuth 2.0 client credentials grant (RFC 6749, section 4.4).

A token is fetched on first use and reused until 15 s before it expires;
concurrent calls share one fetch. With a shared store (replicas on Redis) a token
one replica fetched is used by the others (sealed at rest, keyed by a digest of
the token URL, client id, client secret, scopes and audience), so N replicas do not ask for N
tokens. Failures name the token endpoint's host and status, never the client
secret or the token.

The token URL is chosen by whoever wrote the plan, and the gateway posts to it on
their behalf: in a gateway it goes through a `TokenSession`, whose connections reach
only addresses the fetch policy allows (loopback, private and metadata addresses are
refused unless allowed). Redirects are never followed: they would carry the client
secret elsewhere.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field

from apimcp.backends.credentials import Placement, header_problem
from apimcp.backends.oauth_http import (
    CredentialError,
    TokenClient,
    TokenSession,
    basic_authorization,
    host_of,
    post_form,
)
from apimcp.backends.secret_refs import UnresolvedReference, resolve

__all__ = ["ClientCredentials", "ClientCredentialsTokens", "CredentialError", "TokenClient", "TokenSession"]

log = logging.getLogger("apimcp.backends")

EARLY_RENEWAL_SECONDS = 15
DEFAULT_LIFETIME_SECONDS = 300
SHARED_OWNER = "backend-oauth"
"""The owner the shared store keeps backend tokens under (apart from every user's values)."""


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()
    audience: str | None = None


def token_lifetime(body: dict[str, object]) -> float:
    """Seconds to use an access token for: its `expires_in` less a margin of 15 s, or of half its life when that is
    shorter (a token of 2 s is used for 1 s: never past its expiry), or 300 s without one."""
    lifetime = body.get("expires_in", DEFAULT_LIFETIME_SECONDS)
    lifetime = float(lifetime) if isinstance(lifetime, int | float) and lifetime > 0 else DEFAULT_LIFETIME_SECONDS
    return max(lifetime / 2, lifetime - EARLY_RENEWAL_SECONDS)


MAX_ACCESS_TOKEN_CHARS = 16_384


def access_token_of(body: dict[str, object], what: str) -> str:
    """The access token of a token endpoint's answer, one every call can carry in a header (a control character in
    it, from a server gone wrong or hostile, would end the header it is sent in and start another)."""
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise CredentialError(f"the {what} answered without an access_token")
    problem = header_problem(token)
    if problem is not None:
        raise CredentialError(f"the {what} answered an access_token that cannot be sent: {problem}")
    if len(token) > MAX_ACCESS_TOKEN_CHARS:
        raise CredentialError(f"the {what} answered an access_token longer than {MAX_ACCESS_TOKEN_CHARS} characters")
    return token


class ClientCredentialsTokens:
    """Access tokens for one client, fetched with `session`."""

    def __init__(self, session: TokenClient, credentials: ClientCredentials) -> None:
        self._session = session
        self._credentials = credentials
        self._placement: Placement | None = None
        self._renew_at = 0.0
        self._lock = asyncio.Lock()

    async def placement(self) -> Placement:
        if self._placement is not None and time.monotonic() < self._renew_at:
            return self._placement
        async with self._lock:
            if self._placement is None or time.monotonic() >= self._renew_at:
                await self._fetch()
        assert self._placement is not None
        return self._placement

    async def _fetch(self) -> None:
        c = self._credentials
        try:  # references to the gateway's environment are resolved when a token is fetched
            client_id, client_secret = resolve(c.client_id), resolve(c.client_secret)
        except UnresolvedReference as exc:
            raise CredentialError(str(exc)) from None
        shared = self._session.shared if isinstance(self._session, TokenSession) else None
        # The secret is part of the key: only a plan that holds the client's secret reaches its token.
        parts = [c.token_url, client_id, client_secret, *c.scopes, c.audience or ""]
        key = hashlib.sha256("\x00".join(parts).encode()).hexdigest()
        if shared is not None:
            try:
                kept = await shared.get(SHARED_OWNER, key)
            except Exception as exc:  # the shared store is away: fetch a token of our own
                log.warning("backend tokens: the shared store did not answer (%s)", type(exc).__name__)
                kept, shared = None, None
            if kept is not None and isinstance(kept.get("token"), str) and kept.get("until", 0) > time.time() + 1:
                self._use(str(kept["token"]), float(kept["until"]) - time.time())
                return
        token, lifetime = await self._request(client_id, client_secret)
        self._use(token, lifetime)
        if shared is not None:
            try:
                await shared.put(SHARED_OWNER, key, {"token": token, "until": time.time() + lifetime}, lifetime)
            except Exception as exc:
                log.warning("backend tokens: the shared store did not keep a token (%s)", type(exc).__name__)

    def _use(self, token: str, lifetime: float) -> None:
        self._renew_at = time.monotonic() + lifetime
        self._placement = Placement(headers={"Authorization": f"Bearer {token}"})

    async def _request(self, client_id: str, client_secret: str) -> tuple[str, float]:
        c = self._credentials
        form = {"grant_type": "client_credentials"}
        if c.scopes:
            form["scope"] = " ".join(c.scopes)
        if c.audience:
            form["audience"] = c.audience
        authorization = basic_authorization(client_id, client_secret)
        body = await post_form(
            self._session, c.token_url, form, "token endpoint", authorization=authorization, secrets=(client_secret,)
        )
        token = access_token_of(body, f"token endpoint at {host_of(c.token_url)}")
        return token, token_lifetime(body)
