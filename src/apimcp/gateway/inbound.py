"""From a snapshot's `inbound` section to the guard of an exposition's routes.

Issuers' key sets are shared by every exposition that trusts the same issuer with the same key URL, and kept
across snapshots, so a plan change never refetches keys it already holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.auth.guard import OPEN, ApiKeyGuard, InboundGuard, OAuthGuard
from apimcp.auth.jwks import KeySet
from apimcp.auth.resource import ExpositionResource
from apimcp.auth.settings import Introspection, OAuthSettings, checked_url, parse_oauth
from apimcp.auth.verifier import TokenVerifier
from apimcp.backends.oauth_http import TokenClient


class InboundBuilder:
    def __init__(self, client: TokenClient, public_url: str | None = None) -> None:
        self._client = client
        self.public_url = public_url.rstrip("/") if public_url else None
        self._key_sets: dict[tuple[str, str | None], KeySet] = {}

    def build(self, inbound: Mapping[str, Any], name: str) -> tuple[InboundGuard, ExpositionResource | None]:
        mode = inbound.get("mode", "none")
        if mode == "api_key":
            return ApiKeyGuard(inbound["key_hash"]), None
        if mode == "oauth":
            settings = parse_oauth(inbound["oauth"], "inbound.oauth", _introspection(inbound.get("introspection")))
            verifier = TokenVerifier(settings, self._client, self._keys(settings))
            return OAuthGuard(verifier), ExpositionResource(settings, name, self.public_url)
        if mode != "none":
            raise ValueError(f"unknown inbound security {mode!r}")
        return OPEN, None

    def _keys(self, settings: OAuthSettings) -> dict[str, KeySet]:
        keys = {}
        for issuer in settings.issuers:
            key = (issuer, settings.jwks_uri)
            found = self._key_sets.get(key)
            if found is None:
                found = self._key_sets[key] = KeySet(self._client, jwks_uri=settings.jwks_uri, issuer=issuer)
            keys[issuer] = found
        return keys

    def retain(self, used: set[tuple[str, str | None]]) -> None:
        self._key_sets = {key: keys for key, keys in self._key_sets.items() if key in used}


def _introspection(raw: Any) -> Introspection | None:
    """`{fields: {url, client_id}, values: {client_secret}}`, as a snapshot carries an introspection secret."""
    if not raw:
        return None
    fields, values = raw["fields"], raw["values"]
    url = checked_url(fields["url"], "introspection.url")  # https, or http on loopback, as in configuration files
    return Introspection(url, fields["client_id"], values["client_secret"])
