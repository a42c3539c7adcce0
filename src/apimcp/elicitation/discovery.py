"""Finding an MCP server's own authorization server, and registering the gateway with it, so that each user can
connect their account to the server without anyone configuring endpoints or a client by hand.

As the MCP authorization specification has a client do it (2025-06-18 on):

1. the server's protected-resource metadata (RFC 9728): the `resource_metadata` URL of the `WWW-Authenticate`
   header its 401 carries, else the well-known URIs (path-inserted, then at the root). Its `resource` must be
   the server's own URL (or a prefix of it): a server cannot send users' tokens to another resource;
2. the first of its `authorization_servers`' metadata (RFC 8414, then OpenID Connect discovery, at the
   locations the specification lists), whose `issuer` must be the one named, with PKCE S256;
3. a client: the configured `client_id`, else one registered dynamically (RFC 7591) for the gateway's callback
   and the scopes the server supports, kept in the shared store so that every replica uses the same one (a code
   issued to one client is redeemed by whichever replica the browser comes back to).

The resource indicator (RFC 8707) sent with every authorization and token request is the metadata's `resource`.
Every request goes through the guarded token session (the fetch policy), bounded like every OAuth exchange.
What was found is kept in memory for `KEPT_SECONDS`, shared by the secrets that discover from the same server with
the same callback; each asks for its own scopes (else all the server supports) on every use.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import yarl

from apimcp.backends.oauth_http import TIMEOUT_SECONDS, CredentialError, TokenClient, TokenSession, get_json, post_json
from apimcp.elicitation.secrets import OAuthClient
from apimcp.safety.addresses import AddressRefused

KEPT_SECONDS = 3600.0
MAX_KEPT = 1000
MAX_SCOPES = 50
REGISTRATION_OWNER = "gateway"
"""The owner under which dynamic registrations are kept in the shared store (no user's owner looks like it)."""
REGISTRATION_TTL_SECONDS = 90 * 86400.0
MAX_REDIRECT_URIS = 4
"""Callback URLs registered per authorization server: a gateway without a public URL builds its callback from the
Host a request names, and each would cost a registration."""
_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]{1,2048})"')
_PROBE = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


@dataclass(frozen=True, slots=True)
class _Found:
    """What discovery found for a server: shared by every secret that discovers from it (the secret's own scopes and
    client are applied on every use, never kept here)."""

    authorization_url: str
    token_url: str
    resource: str
    issuer: str
    iss_required: bool
    scopes_supported: tuple[str, ...]
    registered: tuple[str, str | None] | None
    """The client registered for the callback, when the secret names none."""


class OAuthDiscovery:
    def __init__(self, client: TokenClient) -> None:
        self._client = client
        self._found: dict[tuple[str, str, str], tuple[float, _Found]] = {}
        self._finding: dict[tuple[str, str, str], asyncio.Lock] = {}
        self._redirects: dict[str, set[str]] = {}
        """The callback URLs this process registered the gateway for, by authorization server (bounded)."""

    async def client_for(self, configured: OAuthClient, redirect_uri: str) -> OAuthClient:
        """`configured` with its endpoints, resource, scopes and client filled in from its server; as it is when
        it names no server to discover from. `CredentialError` says what could not be found. What was found is
        kept per server, configured client and callback; the secret's own scopes and client are its own on every
        call (two secrets of one server, or one whose scopes changed, never get another's)."""
        server = configured.discover_from
        if server is None:
            return configured
        key = (server, configured.client_id, redirect_uri)
        known = self._found.get(key)
        if known is None or time.monotonic() - known[0] >= KEPT_SECONDS:
            if len(self._finding) > MAX_KEPT:
                self._finding = {k: lock for k, lock in self._finding.items() if lock.locked()}
            async with self._finding.setdefault(key, asyncio.Lock()):  # one discovery at a time per server
                known = self._found.get(key)
                if known is None or time.monotonic() - known[0] >= KEPT_SECONDS:
                    found = await self._discover(configured, server, redirect_uri)
                    if len(self._found) >= MAX_KEPT:
                        self._found.pop(next(iter(self._found)))
                    known = self._found[key] = (time.monotonic(), found)
        return _applied(known[1], configured)

    async def _discover(self, configured: OAuthClient, server: str, redirect_uri: str) -> _Found:
        resource = await self._protected_resource(server)
        issuer = _first_string(resource.get("authorization_servers"))
        if issuer is None:
            raise CredentialError("the MCP server's protected-resource metadata names no authorization server")
        metadata = await self._authorization_server(issuer)
        methods = metadata.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            raise CredentialError("the MCP server's authorization server does not say it supports PKCE (S256)")
        authorization, token = metadata.get("authorization_endpoint"), metadata.get("token_endpoint")
        if not _is_http(authorization) or not _is_http(token):
            raise CredentialError("the MCP server's authorization server names no authorization or token endpoint")
        supported = _scopes(resource.get("scopes_supported"))
        registered = None
        if not configured.client_id:  # registered for what the server supports: each secret asks for its own
            registered = await self._registered(issuer, metadata, redirect_uri, supported)
        return _Found(
            authorization_url=str(authorization),
            token_url=str(token),
            resource=str(resource["resource"]),
            issuer=issuer,
            iss_required=metadata.get("authorization_response_iss_parameter_supported") is True,
            scopes_supported=supported,
            registered=registered,
        )

    async def _protected_resource(self, server: str) -> dict[str, Any]:
        url = yarl.URL(server)
        origin = str(url.origin())
        path = url.path.rstrip("/")
        candidates = [f"{origin}/.well-known/oauth-protected-resource{path}"] if path else []
        candidates.append(f"{origin}/.well-known/oauth-protected-resource")
        named = await self._named_metadata(server)
        if named is not None:
            candidates.insert(0, named)
        for candidate in candidates:
            try:
                document = await get_json(self._client, candidate, "protected-resource metadata")
            except CredentialError:
                continue
            claimed = document.get("resource")
            if not isinstance(claimed, str) or not _covers(claimed, server):
                raise CredentialError("the MCP server's protected-resource metadata names another resource")
            return document
        raise CredentialError("the MCP server publishes no protected-resource metadata (RFC 9728)")

    async def _named_metadata(self, server: str) -> str | None:
        """The `resource_metadata` URL of the `WWW-Authenticate` header the server's 401 carries, if any (on the
        server's own origin: a server names where its users' connections are made, not another host)."""
        try:
            session = self._client.for_url(server) if isinstance(self._client, TokenSession) else self._client
            async with session.post(
                server,
                data=_PROBE,
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
                timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
                allow_redirects=False,
            ) as response:
                challenge = response.headers.get("WWW-Authenticate", "") if response.status == 401 else ""
        except (AddressRefused, aiohttp.ClientError, OSError, TimeoutError, ValueError):
            return None
        found = _RESOURCE_METADATA.search(challenge[:8192])
        if found is None:
            return None
        named = yarl.URL(server).join(yarl.URL(found.group(1)))
        return str(named) if named.origin() == yarl.URL(server).origin() else None

    async def _authorization_server(self, issuer: str) -> dict[str, Any]:
        url = yarl.URL(issuer)
        origin, path = str(url.origin()), url.path.rstrip("/")
        candidates = (
            [
                f"{origin}/.well-known/oauth-authorization-server{path}",
                f"{origin}/.well-known/openid-configuration{path}",
                f"{origin}{path}/.well-known/openid-configuration",
            ]
            if path
            else [f"{origin}/.well-known/oauth-authorization-server", f"{origin}/.well-known/openid-configuration"]
        )
        for candidate in candidates:
            try:
                metadata = await get_json(self._client, candidate, "authorization server metadata")
            except CredentialError:
                continue
            if metadata.get("issuer") != issuer:
                raise CredentialError("the authorization server's metadata names another issuer")
            return metadata
        raise CredentialError("the MCP server's authorization server publishes no metadata (RFC 8414)")

    async def _registered(
        self, issuer: str, metadata: dict[str, Any], redirect_uri: str, scopes: tuple[str, ...]
    ) -> tuple[str, str | None]:
        """The client registered for `redirect_uri` at `issuer`: kept in the shared store, else registered now."""
        shared = self._client.shared if isinstance(self._client, TokenSession) else None
        key = "oauth-client " + hashlib.sha256(f"{issuer}\n{redirect_uri}".encode()).hexdigest()
        if shared is not None:
            kept = await shared.get(REGISTRATION_OWNER, key)
            if kept is not None and isinstance(kept.get("client_id"), str):
                secret = kept.get("client_secret")
                return kept["client_id"], secret if isinstance(secret, str) else None
        registered = self._redirects.setdefault(issuer, set())
        if redirect_uri not in registered and len(registered) >= MAX_REDIRECT_URIS:
            raise CredentialError(  # each Host a request names makes another callback: set the gateway's public URL
                f"the gateway registered itself for {MAX_REDIRECT_URIS} callback URLs at this authorization server "
                "already; give the gateway its public URL (public_url) so that it has one"
            )
        endpoint = metadata.get("registration_endpoint")
        if not _is_http(endpoint):
            raise CredentialError(
                "the MCP server's authorization server takes no dynamic registration: configure a client_id"
            )
        request: dict[str, Any] = {
            "client_name": "apimcp gateway",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        if scopes:
            request["scope"] = " ".join(scopes)
        answer = await post_json(self._client, str(endpoint), request, "registration endpoint")
        client_id, secret = answer.get("client_id"), answer.get("client_secret")
        if not isinstance(client_id, str) or not client_id:
            raise CredentialError("the registration endpoint gave no client_id")
        client = {"client_id": client_id, **({"client_secret": secret} if isinstance(secret, str) else {})}
        if shared is not None:
            await shared.put(REGISTRATION_OWNER, key, client, REGISTRATION_TTL_SECONDS)
        registered.add(redirect_uri)
        return client_id, secret if isinstance(secret, str) else None


def _applied(found: _Found, configured: OAuthClient) -> OAuthClient:
    """`configured` completed by what was found: its own scopes (else those its server supports) and client (else
    the one registered)."""
    client_id, client_secret = found.registered or (configured.client_id, configured.client_secret)
    return replace(
        configured,
        authorization_url=found.authorization_url,
        token_url=found.token_url,
        client_id=client_id,
        client_secret=client_secret,
        scopes=configured.scopes or found.scopes_supported,
        resource=found.resource,
        discover_from=None,
        issuer=found.issuer,
        iss_required=found.iss_required,
    )


def _first_string(value: object) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], str) and _is_http(value[0]):
        return value[0]
    return None


def _is_http(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 2048 and value.startswith(("https://", "http://"))


def _scopes(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(s for s in value[:MAX_SCOPES] if isinstance(s, str) and 0 < len(s) <= 200 and " " not in s)


def _covers(resource: str, server: str) -> bool:
    """Whether the metadata's `resource` is the server's URL, or a prefix of it on the same origin."""
    claimed, actual = yarl.URL(resource), yarl.URL(server)
    if claimed.origin() != actual.origin():
        return False
    prefix = claimed.path.rstrip("/")
    return actual.path.rstrip("/") == prefix or actual.path.startswith(prefix + "/")
