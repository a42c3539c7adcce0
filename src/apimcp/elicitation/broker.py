"""Each user's own backend credentials: found, asked for by URL elicitation, refreshed, forgotten on a 401.

Whose value a call uses is decided by the request alone: the authenticated caller (issuer and subject) when
there is one, else the session (session era). A 2026-07-28 request without an authenticated caller has no
owner, and is refused with a clear message: no value is ever shared between callers.

When the owner has no value for a secret, the call is answered with a URL elicitation:

- 2025-11-25 sessions: a `URL_ELICITATION_REQUIRED` (-32042) error; when the user is done, the session's GET
  stream hears `notifications/elicitation/complete`; the client calls again.
- 2024-11-05 to 2025-06-18 (no URL elicitation): an error naming what is needed, with the link.
- 2026-07-28: an `input_required` result asking for the URL elicitation; the sealed `requestState` is bound
  to the caller, and the retry finds the value.

The link leads to the gateway's elicitation pages (`pages.py`) and works once (`apimcp.state.pending`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from apimcp.auth.resource import request_origin
from apimcp.backends.credentials import Placement
from apimcp.backends.oauth_http import CredentialError, TokenClient
from apimcp.elicitation import connect
from apimcp.elicitation.discovery import OAuthDiscovery
from apimcp.elicitation.secrets import ElicitedSecret
from apimcp.protocol import RequestContext, UrlElicitationRequired
from apimcp.protocol.versions import Era
from apimcp.state.owners import session_owner, user_owner
from apimcp.state.pending import Pending, PendingStore, with_connection
from apimcp.state.user_values import UserValueStore

log = logging.getLogger("apimcp.elicitation")
PAGES = "/elicitation"
CONNECTED_TTL_SECONDS = 30 * 86400.0
MAX_LOCKS = 10_000
"""How long an OAuth connection with a refresh token is kept (it renews itself meanwhile)."""

Notify = Callable[[str, str, str, dict[str, Any]], bool]
"""(exposition id, session id, method, params) -> whether a stream took it."""


_DEAD_GRANT = frozenset({"invalid_grant", "invalid_client", "unauthorized_client"})
"""What a token endpoint answers a refresh whose connection will never work again: it is forgotten, and the user
asked to connect again."""


class CredentialRefused(Exception):
    """The call cannot get the user's credential; the message is what the client sees (a tool call's error, a
    resource read's)."""


class ElicitationBroker:
    def __init__(
        self,
        values: UserValueStore,
        pending: PendingStore,
        client: TokenClient,
        *,
        public_url: str | None = None,
        notify: Notify | None = None,
    ) -> None:
        self.values = values
        self.pending = pending
        self.client = client
        self.public_url = public_url
        self.notify = notify
        self.secrets: dict[str, ElicitedSecret] = {}
        """Every elicited secret some exposition uses, by key (the pages look them up)."""
        self._refreshing: dict[tuple[str, str], asyncio.Lock] = {}
        self.discovery = OAuthDiscovery(client)
        """Finds an MCP server's authorization server and client, for connections that name a server."""

    def use(self, secrets: Iterable[ElicitedSecret]) -> None:
        """Serve these secrets from now on (the runtime calls it with every snapshot)."""
        self.secrets = {secret.key: secret for secret in secrets}

    @staticmethod
    def owner_of(ctx: RequestContext) -> str | None:
        caller = ctx.caller
        if caller is not None:
            return user_owner(caller.principal)
        if ctx.session_id is not None:
            return session_owner(ctx.session_id)
        return None

    def _owner(self, ctx: RequestContext, secret: ElicitedSecret) -> str:
        owner = self.owner_of(ctx)
        if owner is None:
            raise CredentialRefused(
                f"This API is called with each user's own credential ({secret.name}), and this request names "
                "no user: 2026-07-28 requests have no session, so the exposition must authenticate its users "
                "(OAuth) before anyone can supply one."
            )
        return owner

    async def placement(self, ctx: RequestContext, secret: ElicitedSecret, exposition: str) -> Placement:
        """Where the caller's value goes in the call; raises UrlElicitationRequired, InputRequired or
        CredentialRefused when there is none yet."""
        owner = self._owner(ctx, secret)
        token = await self._token(owner, secret)
        if token is None:
            token = await self._ask(ctx, owner, secret, exposition)
        return secret.placement(token)

    async def rejected(self, ctx: RequestContext, secret: ElicitedSecret, exposition: str) -> Placement:
        """The backend answered 401 to the caller's value: it is forgotten and asked for again."""
        owner = self._owner(ctx, secret)
        await self.values.delete(owner, secret.key)
        log.info("the backend refused the value of %s supplied by a user; asking again", secret.name)
        return secret.placement(await self._ask(ctx, owner, secret, exposition, again=True))

    async def _token(self, owner: str, secret: ElicitedSecret) -> str | None:
        value = await self.values.get(owner, secret.key)
        if value is None:
            return None
        expires = value.get("expires_at")
        if not isinstance(expires, int | float) or time.time() < expires:
            token = value.get("token")
            return token if isinstance(token, str) else None
        if len(self._refreshing) > MAX_LOCKS:  # bounded: locks nobody holds or waits for can go
            self._refreshing = {k: lock for k, lock in self._refreshing.items() if lock.locked()}
        lock = self._refreshing.setdefault((owner, secret.key), asyncio.Lock())
        async with lock:
            current = await self.values.get(owner, secret.key)
            if current is None:
                return None  # forgotten meanwhile
            expires = current.get("expires_at")
            if not isinstance(expires, int | float) or time.time() < expires:
                return str(current["token"])  # someone refreshed it meanwhile
            refresh_token = current.get("refresh_token")
            if secret.oauth is None or not isinstance(refresh_token, str):
                await self.values.delete(owner, secret.key)
                return None
            try:
                oauth = await self.discovery.client_for(secret.oauth, str(current.get("redirect_uri") or ""))
                renewed = await connect.refresh(self.client, oauth, refresh_token)
                if "redirect_uri" in current:
                    renewed["redirect_uri"] = current["redirect_uri"]
            except CredentialError as exc:
                if exc.oauth_error not in _DEAD_GRANT:  # the server away, or busy: the connection stays for later
                    log.warning("the connection for %s could not be refreshed now: %s", secret.name, exc)
                    raise CredentialRefused(f"The connection to {secret.name} could not be renewed just now: try "
                                            "again shortly") from None  # fmt: skip
                log.info("the connection for %s could not be refreshed: %s", secret.name, exc)
                await self.values.delete(owner, secret.key)
                return None
            await self.values.put(owner, secret.key, renewed, CONNECTED_TTL_SECONDS)
            return str(renewed["token"])

    async def _ask(
        self, ctx: RequestContext, owner: str, secret: ElicitedSecret, exposition: str, *, again: bool = False
    ) -> str:
        pending = await self.pending.open(owner, secret.key, exposition, ctx.session_id)
        source = ctx.source
        url = f"{request_origin(source.scheme, source.headers, self.public_url)}{PAGES}/{pending.id}"
        message = secret.prompt()
        if ctx.revision.era is not Era.STATELESS:
            raise UrlElicitationRequired([{"elicitationId": pending.id, "url": url, "message": message}])
        answer = await ctx.elicit_url(message, url, pending.id, key=f"credential {secret.key}")
        # The client retried with the user's answer: the value is there if the user went through with it.
        token = await self._token(owner, secret)
        if token is not None and not again:
            return token
        action = answer.get("action")
        if action in ("decline", "cancel"):
            raise CredentialRefused(f"The user did not provide their credential for {secret.name}.")
        if again:
            raise CredentialRefused(
                f"The API refused the credential supplied for {secret.name}; try again (the tool call or the resource "
                "read) to supply a new one."
            )
        raise CredentialRefused(
            f"No credential was supplied for {secret.name}; try again (the tool call or resource read) to supply one."
        )

    # --- what the elicitation pages do ---------------------------------------------------------------------

    async def complete(self, pending: Pending, value: dict[str, Any], ttl_seconds: float | None = None) -> None:
        """Store the value the user supplied for `pending` (already taken from the store) and tell the session."""
        await self.values.put(pending.owner, pending.key, value, ttl_seconds)
        if pending.session_id is not None and self.notify is not None:
            params = {"elicitationId": pending.id}
            self.notify(pending.exposition, pending.session_id, "notifications/elicitation/complete", params)

    async def start_connection(self, pending: Pending, redirect_uri: str) -> tuple[str, str]:
        """The authorization URL to send the browser to, and the nonce its cookie must carry back."""
        secret = self.secrets.get(pending.key)
        assert secret is not None
        assert secret.oauth is not None
        started = with_connection(pending)
        await self.pending.update(started)
        assert started.state is not None
        assert started.verifier is not None
        assert started.nonce is not None
        oauth = await self.discovery.client_for(secret.oauth, redirect_uri)
        return connect.authorization_url(oauth, redirect_uri, started.state, started.verifier), started.nonce

    async def finish_connection(self, pending: Pending, code: str, redirect_uri: str, iss: str | None = None) -> None:
        """Exchange the authorization code of `pending` (already taken) and keep what it gives; `iss`: the issuer the
        answer names (RFC 9207), which must be the authorization server this connection went to."""
        secret = self.secrets.get(pending.key)
        if secret is None or secret.oauth is None or pending.verifier is None:
            raise CredentialError("this connection is no longer offered")
        oauth = await self.discovery.client_for(secret.oauth, redirect_uri)
        if oauth.issuer is not None and (iss is not None or oauth.iss_required) and iss != oauth.issuer:
            # a mix-up: another authorization server's code, whose exchange would hand it and the verifier over
            raise CredentialError("the answer names another authorization server than the one asked (iss)")
        value = await connect.exchange_code(self.client, oauth, code, pending.verifier, redirect_uri)
        if secret.oauth.discover_from is not None:
            value["redirect_uri"] = redirect_uri  # which registered client refreshes it
        ttl = CONNECTED_TTL_SECONDS if "refresh_token" in value else max(5.0, value["expires_at"] - time.time())
        await self.complete(pending, value, ttl)
