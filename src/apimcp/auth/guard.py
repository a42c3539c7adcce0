"""Who may reach an exposition: no check, an API key, or an OAuth 2.1 access token.

A guard looks at a request's headers before the MCP endpoint does and either admits it (with the `Caller`
an access token names, which the engine then binds sessions and `requestState` to) or refuses it with the
status, `WWW-Authenticate` challenge and reason an audit trail records. Refusals never repeat the token.
"""

from __future__ import annotations

import hashlib
import hmac
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimcp.auth.resource import ProtectedResource
from apimcp.auth.verifier import TokenRejected, TokenVerifier
from apimcp.protocol.caller import Caller

API_KEY_HEADERS = (b"x-api-key", b"x-reshapr-key")
"""Headers an API key may travel in, besides `Authorization: Bearer` (x-reshapr-key: reShapr's clients)."""


@dataclass(frozen=True, slots=True)
class Refusal(Exception):
    status: int
    message: str
    reason: str
    """Why, for the audit trail: missing_api_key, invalid_api_key, missing_bearer_token, invalid_token…"""
    challenge: bytes

    def __str__(self) -> str:
        return self.message


_OUTAGES = frozenset({"invalid_jwks_uri", "introspection_failed"})
"""Refusals that say the issuer's keys or its introspection endpoint could not be reached (what went wrong is in the
log, never told the client: it names internal hosts and settings)."""


def bearer_token(headers: Any) -> str | None:
    for name, value in headers:
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return str(value[7:].strip().decode("latin-1"))
    return None


class InboundGuard(ABC):
    @abstractmethod
    async def admit(self, scope: Mapping[str, Any], resource: ProtectedResource | None) -> Caller | None:
        """The caller (None when the guard authenticates no user); raises `Refusal`."""

    @property
    def oauth(self) -> TokenVerifier | None:
        return None


class OpenGuard(InboundGuard):
    async def admit(self, scope: Mapping[str, Any], resource: ProtectedResource | None) -> Caller | None:
        return None


OPEN = OpenGuard()


class ApiKeyGuard(InboundGuard):
    """The plan's key, compared by hash in constant time, from `Authorization: Bearer`, X-API-Key or
    x-reshapr-key."""

    def __init__(self, key_hash: str) -> None:
        self._hash = key_hash

    async def admit(self, scope: Mapping[str, Any], resource: ProtectedResource | None) -> Caller | None:
        presented = False
        for name, value in scope["headers"]:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                candidate = value[7:].strip()
            elif name in API_KEY_HEADERS:
                candidate = value.strip()
            else:
                continue
            presented = True
            if hmac.compare_digest(hashlib.sha256(candidate).hexdigest(), self._hash):
                return None
        raise Refusal(
            401,
            "This endpoint needs an API key: Authorization: Bearer <key> or X-API-Key: <key>",
            "invalid_api_key" if presented else "missing_api_key",
            b'Bearer realm="apimcp"',
        )


class OAuthGuard(InboundGuard):
    """An access token for this exposition, with the exposition's scopes."""

    def __init__(self, verifier: TokenVerifier) -> None:
        self._verifier = verifier

    @property
    def oauth(self) -> TokenVerifier | None:
        return self._verifier

    async def admit(self, scope: Mapping[str, Any], resource: ProtectedResource | None) -> Caller | None:
        assert resource is not None
        token = bearer_token(scope["headers"])
        if not token:
            raise Refusal(
                401, "This endpoint needs an OAuth access token: Authorization: Bearer <token>",
                "missing_bearer_token", resource.challenge(),
            )  # fmt: skip
        try:
            caller = await self._verifier.verify(token, resource.accepted)
        except TokenRejected as rejected:
            if rejected.reason in _OUTAGES:  # the server's trouble, not the token's: the client keeps it, and retries
                raise Refusal(503, "The access token cannot be checked just now: try again shortly", rejected.reason,
                              b"") from None  # fmt: skip
            text = str(rejected)
            raise Refusal(401, f"The access token is refused: {text}", rejected.reason,
                          resource.challenge("invalid_token", text)) from None  # fmt: skip
        missing = [s for s in resource.settings.scopes if s not in caller.scopes]
        if missing:
            text = f"The access token lacks the scope {' '.join(missing)} this endpoint needs"
            raise Refusal(403, text, "missing_scope", resource.challenge("insufficient_scope", text))
        return caller
