"""Backend secrets whose value each user supplies: a token pasted in a form, or an OAuth 2.0 connection.

A snapshot carries them among a member's credentials (`{kind, id, name, fields, values}`, kinds `user_token` and
`user_oauth`); the gateway never sends them as they are: it asks each user for their own value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimcp.backends.credentials import Placement

KINDS = ("user_token", "user_oauth")


@dataclass(frozen=True, slots=True)
class OAuthClient:
    """What the gateway connects a user's account with (authorization code grant, PKCE)."""

    authorization_url: str
    token_url: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    resource: str | None = None
    """An RFC 8707 resource indicator for the backend, when its authorization server wants one."""
    discover_from: str | None = None
    """An MCP server whose authorization server, resource and (unless `client_id` is given) client are found
    when a user first connects (`discovery.py`); the endpoints above are empty until then."""
    issuer: str | None = None
    """The authorization server's issuer, once discovered: the `iss` of its answers (RFC 9207)."""
    iss_required: bool = False
    """Its metadata says it names itself in every answer (`authorization_response_iss_parameter_supported`)."""


@dataclass(frozen=True, slots=True)
class ElicitedSecret:
    key: str
    """Unique in the gateway: `organization/secret id` (values are kept under it, per owner)."""
    name: str
    header: str = "Authorization"
    scheme: str = "Bearer"
    """What precedes the value in the header (`Bearer`); empty: the value alone."""
    message: str | None = None
    oauth: OAuthClient | None = None

    @property
    def kind(self) -> str:
        return "user_oauth" if self.oauth is not None else "user_token"

    def placement(self, token: str) -> Placement:
        return Placement(headers={self.header: f"{self.scheme} {token}" if self.scheme else token})

    def prompt(self) -> str:
        if self.message:
            return self.message
        if self.oauth is not None:
            return f"Connect your account to let the assistant call this API as you ({self.name})."
        return f"Provide your own credential for this API ({self.name}); it is kept for you alone."


def elicited_secret(organization: str, raw: Mapping[str, Any], server: str | None = None) -> ElicitedSecret:
    """From a snapshot credential of kind user_token or user_oauth; `server`: the MCP server of the member, whose
    authorization server a `user_oauth` credential with `discover` connects to."""
    fields, values = raw.get("fields") or {}, raw.get("values") or {}
    key = f"{organization}/{raw.get('id') or raw.get('name')}"
    name = str(raw.get("name") or raw.get("id") or "credential")
    oauth = None
    if raw["kind"] == "user_oauth":
        discover = bool(fields.get("discover"))
        if discover and server is None:
            raise ValueError(f"{name}: only an MCP server's authorization server is discovered")
        if discover and server is not None:  # one secret on several servers: each server's connection is its own
            key = f"{key}@{hashlib.sha256(server.encode()).hexdigest()[:16]}"  # (the URL is never shown to clients)
        oauth = OAuthClient(
            authorization_url="" if discover else fields["authorization_url"],
            token_url="" if discover else fields["token_url"],
            client_id=fields.get("client_id") or "" if discover else fields["client_id"],
            client_secret=values.get("client_secret") or None,
            scopes=tuple(fields.get("scopes") or ()),
            resource=fields.get("resource"),
            discover_from=server if discover else None,
        )
    return ElicitedSecret(
        key=key,
        name=name,
        header=fields.get("header") or "Authorization",
        scheme=fields.get("scheme", "Bearer") if "scheme" in fields else "Bearer",
        message=fields.get("message"),
        oauth=oauth,
    )
