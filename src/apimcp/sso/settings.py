"""Which OpenID provider people sign in with, and as which client of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

ISSUER_VARIABLE = "APIMCP_SSO_ISSUER"
CLIENT_ID_VARIABLE = "APIMCP_SSO_CLIENT_ID"
CLIENT_SECRET_VARIABLE = "APIMCP_SSO_CLIENT_SECRET"
REDIRECT_VARIABLE = "APIMCP_SSO_REDIRECT_URI"
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


class SsoSettingsError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class SsoSettings:
    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    """None: a public client (PKCE alone); else sent by HTTP Basic to the token endpoint."""
    redirect_uri: str | None = None
    """The callback registered with the provider; None: this control plane's own, from the request's origin."""
    scopes: tuple[str, ...] = ("openid", "email", "profile")


def _https_or_loopback(url: str, name: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "https" or (parts.scheme == "http" and (parts.hostname or "") in LOOPBACK):
        if parts.query or parts.fragment or not parts.hostname:
            raise SsoSettingsError(f"{name} must be a URL without query or fragment")
        return url.rstrip("/")
    raise SsoSettingsError(f"{name} must be an https:// URL (http:// only on loopback)")


def from_environment(environ: Mapping[str, str]) -> SsoSettings | None:
    """The settings the variables give; None when no issuer is named (people then sign in with tokens only)."""
    issuer = environ.get(ISSUER_VARIABLE, "").strip()
    if not issuer:
        return None
    client_id = environ.get(CLIENT_ID_VARIABLE, "").strip()
    if not client_id:
        raise SsoSettingsError(f"{ISSUER_VARIABLE} is set: set {CLIENT_ID_VARIABLE} too")
    redirect = environ.get(REDIRECT_VARIABLE, "").strip() or None
    return SsoSettings(
        issuer=_https_or_loopback(issuer, ISSUER_VARIABLE),
        client_id=client_id,
        client_secret=environ.get(CLIENT_SECRET_VARIABLE) or None,
        redirect_uri=_https_or_loopback(redirect, REDIRECT_VARIABLE) if redirect else None,
    )
