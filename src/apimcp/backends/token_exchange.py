"""Backend tokens on the caller's behalf by OAuth 2.0 Token Exchange (RFC 8693).

The gateway sends the caller's own access token as the `subject_token` and receives a token for the
backend's audience; the caller's token itself never reaches the backend. Exchanged tokens are cached per
subject token (what it may do depends on that token's client and scopes, not only on its user) until shortly
before they expire, in a bounded cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from apimcp.backends.credentials import Placement
from apimcp.backends.oauth_client import access_token_of, token_lifetime
from apimcp.backends.oauth_http import CredentialError, TokenClient, basic_authorization, host_of, post_form
from apimcp.backends.secret_refs import UnresolvedReference, resolve

GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
MAX_CACHED = 10_000


@dataclass(frozen=True, slots=True)
class TokenExchange:
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    audience: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()
    subject_token_type: str = ACCESS_TOKEN
    requested_token_type: str | None = None
    header: str = "Authorization"


class TokenExchanger:
    """Exchanges callers' tokens for backend tokens, with one secret's client."""

    def __init__(self, client: TokenClient, exchange: TokenExchange) -> None:
        self._client = client
        self.exchange = exchange
        self._cache: OrderedDict[str, tuple[float, Placement]] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}

    async def placement(self, principal: str, subject_token: str) -> Placement:
        key = f"{principal}\x00{hashlib.sha256(subject_token.encode()).hexdigest()}"
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() < cached[0]:
            return cached[1]
        if len(self._locks) > MAX_CACHED:  # bounded: locks nobody holds or waits for can go
            self._locks = {k: lock for k, lock in self._locks.items() if lock.locked()}
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._cache.get(key)
            if cached is not None and time.monotonic() < cached[0]:
                return cached[1]
            token, lifetime = await self._exchange(subject_token)
            placement = Placement(headers={self.exchange.header: f"Bearer {token}"})
            self._cache[key] = (time.monotonic() + lifetime, placement)
            self._cache.move_to_end(key)
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
            return placement

    def forget(self, principal: str, subject_token: str) -> None:
        """The backend refused the exchanged token: the next call exchanges again."""
        self._cache.pop(f"{principal}\x00{hashlib.sha256(subject_token.encode()).hexdigest()}", None)

    async def _exchange(self, subject_token: str) -> tuple[str, float]:
        e = self.exchange
        form = {"grant_type": GRANT, "subject_token": subject_token, "subject_token_type": e.subject_token_type}
        if e.audience:
            form["audience"] = e.audience
        if e.resource:
            form["resource"] = e.resource
        if e.scopes:
            form["scope"] = " ".join(e.scopes)
        if e.requested_token_type:
            form["requested_token_type"] = e.requested_token_type
        try:
            client_secret = resolve(e.client_secret)
        except UnresolvedReference as exc:
            raise CredentialError(str(exc)) from None
        body = await post_form(
            self._client,
            e.token_url,
            form,
            "token exchange endpoint",
            authorization=basic_authorization(e.client_id, client_secret),
            secrets=(client_secret, subject_token),
        )
        return access_token_of(body, f"token exchange endpoint at {host_of(e.token_url)}"), token_lifetime(body)


__all__ = ["CredentialError", "TokenExchange", "TokenExchanger"]
