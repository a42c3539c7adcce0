"""How an exposition checks OAuth access tokens: one frozen record, read from plans and configuration files.

The same `parse_oauth` checks a plan's `oauth` object in the control plane, an exposition's `auth.oauth` in a
configuration file, and what a snapshot carries, so every way in refuses the same mistakes with the same
words (the field named).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Asymmetric JWS algorithms only: `none` and HMAC (HS*) can never verify an access token from a public key."""
DEFAULT_LEEWAY_SECONDS = 60
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,200}$")  # RFC 6749 scope-token
_FIELDS = frozenset({"issuers", "jwks_uri", "audiences", "audience_check", "scopes", "tool_scopes", "leeway_seconds",
                     "algorithms", "introspection"})  # fmt: skip


class OAuthSettingsError(ValueError):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Introspection:
    """RFC 7662 introspection of opaque tokens, with the gateway's client credentials."""

    url: str
    client_id: str
    client_secret: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    issuers: tuple[str, ...]
    """Authorization servers whose tokens are accepted (`iss`), listed in the protected resource metadata."""
    jwks_uri: str | None = None
    """Where the issuers' signing keys are; None: read from the first issuer's metadata."""
    audiences: tuple[str, ...] = ()
    """Accepted besides the exposition's own URLs (RFC 8707 resource indicators)."""
    audience_check: bool = True
    scopes: tuple[str, ...] = ()
    """Every token must carry these."""
    tool_scopes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Calling a tool needs these too; tools a caller may not call are left out of its tools/list."""
    leeway_seconds: int = DEFAULT_LEEWAY_SECONDS
    algorithms: tuple[str, ...] = ALGORITHMS
    introspection: Introspection | None = None

    def all_scopes(self) -> tuple[str, ...]:
        """Every scope this exposition knows, for `scopes_supported`."""
        seen = dict.fromkeys(self.scopes)
        for scopes in self.tool_scopes.values():
            seen.update(dict.fromkeys(scopes))
        return tuple(seen)

    def public(self) -> dict[str, Any]:
        """The settings as JSON, without the introspection secret (a plan view, a snapshot before sealing)."""
        out: dict[str, Any] = {
            "issuers": list(self.issuers),
            "audiences": list(self.audiences),
            "audience_check": self.audience_check,
            "scopes": list(self.scopes),
            "tool_scopes": {tool: list(scopes) for tool, scopes in self.tool_scopes.items()},
            "leeway_seconds": self.leeway_seconds,
            "algorithms": list(self.algorithms),
        }
        if self.jwks_uri is not None:
            out["jwks_uri"] = self.jwks_uri
        return out


def checked_url(value: object, where: str, *, https_off_loopback: bool = True) -> str:
    """`value` when it is an http(s) URL, https unless its host is a loopback one; OAuthSettingsError if not."""
    if not isinstance(value, str) or not re.match(r"^https?://[^\s/?#]+[^\s]*$", value):
        raise OAuthSettingsError(f"{where} must be an http(s) URL", where)
    host = value.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0].strip("[]").lower()
    loopback = host in ("localhost", "::1") or host.startswith("127.") or host.endswith(".localhost")
    if https_off_loopback and value.startswith("http://") and not loopback:
        raise OAuthSettingsError(f"{where} must use https (http is accepted for loopback addresses only)", where)
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise OAuthSettingsError(f"{where} must be a list of non-empty strings", where)
    return tuple(value)


def _scopes(value: object, where: str) -> tuple[str, ...]:
    scopes = _strings(value, where)
    for scope in scopes:
        if not _SCOPE.fullmatch(scope):
            raise OAuthSettingsError(f"{where}: {scope!r} is not a scope (printable ASCII, no space, quote or \\)",
                                     where)  # fmt: skip
    return scopes


def parse_oauth(raw: object, where: str = "oauth", introspection: Introspection | None = None) -> OAuthSettings:
    """Settings from their JSON form; `introspection` comes from a secret, when the plan names one."""
    if not isinstance(raw, Mapping):
        raise OAuthSettingsError(f"{where} must be an object", where)
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise OAuthSettingsError(f"{where} has no field {unknown[0]!r}", f"{where}.{unknown[0]}")
    issuers = tuple(checked_url(i, f"{where}.issuers") for i in _strings(raw.get("issuers"), f"{where}.issuers"))
    if not issuers:
        raise OAuthSettingsError(f"{where}.issuers must name at least one authorization server", f"{where}.issuers")
    jwks_uri = raw.get("jwks_uri")
    if jwks_uri is not None:
        jwks_uri = checked_url(jwks_uri, f"{where}.jwks_uri")
    tool_scopes_raw = raw.get("tool_scopes") or {}
    if not isinstance(tool_scopes_raw, Mapping):
        raise OAuthSettingsError(f"{where}.tool_scopes maps tool names to scopes", f"{where}.tool_scopes")
    tool_scopes = {
        str(tool): _scopes(scopes, f"{where}.tool_scopes.{tool}") for tool, scopes in tool_scopes_raw.items()
    }
    leeway = raw.get("leeway_seconds", DEFAULT_LEEWAY_SECONDS)
    if not isinstance(leeway, int) or isinstance(leeway, bool) or not 0 <= leeway <= 300:
        raise OAuthSettingsError(f"{where}.leeway_seconds is 0 to 300", f"{where}.leeway_seconds")
    algorithms = _strings(raw.get("algorithms"), f"{where}.algorithms") or ALGORITHMS
    refused = [a for a in algorithms if a not in ALGORITHMS]
    if refused:
        raise OAuthSettingsError(
            f"{where}.algorithms: {refused[0]} is not accepted; access tokens are verified with one of "
            f"{', '.join(ALGORITHMS)}",
            f"{where}.algorithms",
        )
    audience_check = raw.get("audience_check", True)
    if not isinstance(audience_check, bool):
        raise OAuthSettingsError(f"{where}.audience_check is true or false", f"{where}.audience_check")
    return OAuthSettings(
        issuers=issuers,
        jwks_uri=jwks_uri,
        audiences=_strings(raw.get("audiences"), f"{where}.audiences"),
        audience_check=audience_check,
        scopes=_scopes(raw.get("scopes"), f"{where}.scopes"),
        tool_scopes=tool_scopes,
        leeway_seconds=leeway,
        algorithms=algorithms,
        introspection=introspection,
    )


def parse_introspection(raw: object, where: str = "introspection") -> Introspection:
    """An introspection client from `{url, client_id, client_secret}`."""
    if not isinstance(raw, Mapping):
        raise OAuthSettingsError(f"{where} must be an object", where)
    url = checked_url(raw.get("url"), f"{where}.url")
    client_id, secret = raw.get("client_id"), raw.get("client_secret")
    if not isinstance(client_id, str) or not client_id:
        raise OAuthSettingsError(f"{where}.client_id is needed", f"{where}.client_id")
    if not isinstance(secret, str) or not secret:
        raise OAuthSettingsError(f"{where}.client_secret is needed", f"{where}.client_secret")
    return Introspection(url, client_id, secret)
