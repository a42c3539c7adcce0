"""Identity in a configuration file: who may reach an exposition, and backend credentials each user supplies.

```yaml
services:
  crm:
    openapi: ./crm.yaml
    credentials:
      - {type: user_token, name: crm-token, header: Authorization, scheme: Bearer}   # each user pastes theirs
      - {type: user_oauth, name: crm, authorization_url: https://crm/authorize, token_url: https://crm/token,
         client_id: apimcp, client_secret: {env: CRM_CLIENT_SECRET}, scopes: [read]}  # each user connects
      - {type: token_exchange, name: crm-exchange, token_url: https://idp/token, client_id: gw,
         client_secret: {env: GW_SECRET}, audience: https://crm}                     # RFC 8693
    header_policy: {allow: [x-request-id], rename: {x-crm-tenant: x-tenant}}
expositions:
  crm:
    services: [crm]
    audit: true
    auth:
      oauth: {issuers: [https://idp.example.com], scopes: [mcp:use], tool_scopes: {delete_contact: [crm:admin]}}
      # or: api_key: {env: CRM_MCP_KEY}
```
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from apimcp.auth.settings import OAuthSettingsError, parse_introspection, parse_oauth
from apimcp.forwarding.policy import HeaderPolicyError, parse_header_policy
from apimcp.gateway.config_base import EnvRef, _Strict


class UserTokenConfig(_Strict):
    type: Literal["user_token"]
    name: str = Field(min_length=1, max_length=64)
    header: str = "Authorization"
    scheme: str = "Bearer"
    message: str | None = None


class UserOAuthConfig(_Strict):
    """Each user connects their account. Without `authorization_url` and `token_url` (MCP services only), the
    server's own authorization server is discovered, and without `client_id` the gateway registers itself
    (`apimcp.elicitation.discovery`)."""

    type: Literal["user_oauth"]
    name: str = Field(min_length=1, max_length=64)
    authorization_url: str | None = Field(default=None, pattern=r"^https?://")
    token_url: str | None = Field(default=None, pattern=r"^https?://")
    client_id: str | None = Field(default=None, min_length=1)
    client_secret: EnvRef | None = None
    scopes: tuple[str, ...] = ()
    resource: str | None = None
    header: str = "Authorization"
    message: str | None = None

    @model_validator(mode="after")
    def _endpoints(self) -> UserOAuthConfig:
        if (self.authorization_url is None) != (self.token_url is None):
            raise ValueError("give both authorization_url and token_url, or neither (to discover an MCP server's)")
        if self.authorization_url is not None and self.client_id is None:
            raise ValueError("client_id is needed with authorization_url (only a discovered server registers one)")
        if self.discovers and self.resource is not None:
            raise ValueError("resource is the MCP server's own when its authorization server is discovered")
        if self.discovers and self.client_secret is not None:  # the token endpoint is the one the server names
            raise ValueError("a discovered authorization server gets no client_secret: give authorization_url and "
                             "token_url to use one")  # fmt: skip
        return self

    @property
    def discovers(self) -> bool:
        return self.authorization_url is None


class TokenExchangeConfig(_Strict):
    type: Literal["token_exchange"]
    name: str = Field(min_length=1, max_length=64)
    token_url: str = Field(pattern=r"^https?://")
    client_id: str = Field(min_length=1)
    client_secret: EnvRef
    audience: str | None = None
    resource: str | None = None
    scopes: tuple[str, ...] = ()
    header: str = "Authorization"


PerUserConfig = Annotated[UserTokenConfig | UserOAuthConfig | TokenExchangeConfig, Field(discriminator="type")]


def per_user_snapshot(service: str, config: UserTokenConfig | UserOAuthConfig | TokenExchangeConfig) -> dict[str, Any]:
    """The credential as a snapshot carries it (secrets read from the environment now)."""
    if isinstance(config, UserTokenConfig):
        fields: dict[str, Any] = {"header": config.header, "scheme": config.scheme}
        if config.message:
            fields["message"] = config.message
        return {"kind": "user_token", "id": f"{service}.{config.name}", "name": config.name, "fields": fields,
                "values": {}}  # fmt: skip
    if isinstance(config, UserOAuthConfig):
        fields = {"scopes": list(config.scopes), "header": config.header}
        if config.discovers:
            fields["discover"] = True
        for key in ("authorization_url", "token_url", "client_id", "resource", "message"):
            if getattr(config, key):
                fields[key] = getattr(config, key)
        values = {"client_secret": config.client_secret.value()} if config.client_secret else {}
        return {"kind": "user_oauth", "id": f"{service}.{config.name}", "name": config.name, "fields": fields,
                "values": values}  # fmt: skip
    fields = {"token_url": config.token_url, "client_id": config.client_id, "scopes": list(config.scopes),
              "header": config.header}  # fmt: skip
    for key in ("audience", "resource"):
        if getattr(config, key):
            fields[key] = getattr(config, key)
    return {"kind": "oauth_token_exchange", "id": f"{service}.{config.name}", "name": config.name,
            "fields": fields, "values": {"client_secret": config.client_secret.value()}}  # fmt: skip


class IntrospectionConfig(_Strict):
    url: str
    client_id: str
    client_secret: EnvRef


class AuthConfig(_Strict):
    """An exposition's inbound security: an API key, or OAuth access tokens (at most one)."""

    api_key: EnvRef | None = None
    oauth: dict[str, Any] | None = None
    introspection: IntrospectionConfig | None = None

    @field_validator("oauth")
    @classmethod
    def _oauth(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            try:
                parse_oauth(value, "oauth")
            except OAuthSettingsError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one(self) -> AuthConfig:
        if self.api_key is not None and self.oauth is not None:
            raise ValueError("give api_key or oauth, not both")
        if self.introspection is not None and self.oauth is None:
            raise ValueError("introspection checks OAuth tokens: it needs oauth")
        return self

    def inbound(self) -> dict[str, Any]:
        """The exposition's `inbound` section of a snapshot (the key's hash, never the key)."""
        if self.api_key is not None:
            return {"mode": "api_key", "key_hash": hashlib.sha256(self.api_key.value().encode()).hexdigest()}
        if self.oauth is None:
            return {"mode": "none"}
        inbound: dict[str, Any] = {"mode": "oauth", "oauth": parse_oauth(self.oauth, "oauth").public()}
        if self.introspection is not None:
            given = self.introspection
            checked = parse_introspection(
                {"url": given.url, "client_id": given.client_id, "client_secret": given.client_secret.value()},
                "introspection",
            )
            inbound["introspection"] = {"fields": {"url": checked.url, "client_id": checked.client_id},
                                        "values": {"client_secret": checked.client_secret}}  # fmt: skip
        return inbound


def checked_header_policy(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None:
        try:
            parse_header_policy(value, "header_policy")
        except HeaderPolicyError as exc:
            raise ValueError(str(exc)) from None
    return value
