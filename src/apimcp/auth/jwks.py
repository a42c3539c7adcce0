"""The signing keys of an authorization server: fetched once, cached, fetched again for a key id never seen.

The JWK set URL is the plan's `jwks_uri`, or the `jwks_uri` of the first issuer's metadata (RFC 8414
`/.well-known/oauth-authorization-server`, then OpenID Connect discovery). Every fetch goes through the
guarded token session (the fetch policy, one deadline, a size bound). A token naming an unknown `kid`
makes the keys fetched again, at most once every `refetch_seconds`: a rotated key is found at once, and a
flood of made-up key ids costs one request per interval, not one per token. Concurrent lookups share one
fetch. When a fetch fails, the keys held so far keep serving.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

from apimcp.auth.settings import OAuthSettingsError, checked_url
from apimcp.backends.oauth_http import CredentialError, TokenClient, get_json

log = logging.getLogger("apimcp.auth")
DEFAULT_MAX_AGE_SECONDS = 3600.0
DEFAULT_REFETCH_SECONDS = 10.0
MAX_KEYS = 100
MAX_TRIED = 8
"""Keys a token that names none is checked against, at most."""


class KeyNotFound(Exception):
    """No key of the issuer verifies this token (unknown key id, or a key of another type)."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str | None
    kty: str
    alg: str | None
    """The algorithm the key declares, if it declares one."""
    crv: str | None
    key: Any
    """The public key, as the `cryptography` object PyJWT verifies with."""

    def fits(self, algorithm: str) -> bool:
        """Whether this key may verify a token signed with `algorithm` (an RSA key never checks an ES256 token,
        a P-256 key never an ES384 one)."""
        if self.alg is not None and self.alg != algorithm:
            return False
        if self.kty == "RSA":
            return algorithm[:2] in ("RS", "PS")
        if self.kty == "EC":
            return _EC_CURVES.get(algorithm) == self.crv
        return self.kty == "OKP" and algorithm == "EdDSA" and self.crv in ("Ed25519", "Ed448")


_EC_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
_KEY_TYPES = ("RSA", "EC", "OKP")


def parse_key_set(document: Mapping[str, Any]) -> list[SigningKey]:
    """The signature keys of a JWK set; keys for encryption, or that cannot be read, are left out."""
    keys = document.get("keys")
    if not isinstance(keys, list):
        raise CredentialError("the JWK set has no 'keys' list")
    found = []
    for raw in keys[:MAX_KEYS]:
        if not isinstance(raw, dict) or raw.get("use", "sig") != "sig" or raw.get("kty") not in _KEY_TYPES:
            continue
        alg, kid, crv = raw.get("alg"), raw.get("kid"), raw.get("crv")
        try:
            # PyJWK needs an algorithm for OKP keys; which one is checked by SigningKey.fits, not here.
            key = jwt.PyJWK(raw, algorithm="EdDSA" if raw["kty"] == "OKP" and alg is None else None).key
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError):
            continue  # a key this library cannot read verifies nothing; the others still work
        found.append(SigningKey(
            kid if isinstance(kid, str) else None, raw["kty"], alg if isinstance(alg, str) else None,
            crv if isinstance(crv, str) else None, key,
        ))  # fmt: skip
    return found


def _acceptable(uri: str) -> bool:
    """A key set URL from metadata is held to the rule of configured ones: https, or http on loopback."""
    try:
        checked_url(uri, "jwks_uri")
    except OAuthSettingsError:
        return False
    return True


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is: RFC 8414 (the well-known part before the issuer's path), then OpenID
    Connect discovery (after it)."""
    scheme, _, rest = issuer.partition("://")
    authority, slash, path = rest.partition("/")
    path = (slash + path).rstrip("/")
    return [
        f"{scheme}://{authority}/.well-known/oauth-authorization-server{path}",
        f"{scheme}://{authority}{path}/.well-known/openid-configuration",
    ]


class KeySet:
    """The signing keys of one authorization server."""

    def __init__(
        self,
        client: TokenClient,
        *,
        jwks_uri: str | None,
        issuer: str,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        refetch_seconds: float = DEFAULT_REFETCH_SECONDS,
    ) -> None:
        self._client = client
        self._jwks_uri = jwks_uri
        self._issuer = issuer
        self._max_age = max_age_seconds
        self._refetch = refetch_seconds
        self._keys: list[SigningKey] = []
        self._fetched_at = float("-inf")
        self._refetched_at = float("-inf")
        """When a token naming an unknown key last made it fetch the keys again."""
        self._lock = asyncio.Lock()

    async def keys_for(self, kid: str | None, algorithm: str) -> list[SigningKey]:
        """The key named `kid`, or without one every key that fits `algorithm` (RFC 7515 4.1.4: any of the
        issuer's keys may have signed a token that names none)."""
        if time.monotonic() - self._fetched_at > self._max_age:
            await self._fetch(refetch=False)
        keys = self._fitting(kid, algorithm)
        if not keys:
            keys = await self.fetched_again(kid, algorithm)  # a rotated key: ask again
        if not keys:
            raise KeyNotFound(f"no key of the issuer has id {kid!r} for {algorithm}" if kid else
                              f"no key of the issuer verifies {algorithm} tokens")  # fmt: skip
        return keys

    async def fetched_again(self, kid: str | None, algorithm: str) -> list[SigningKey]:
        """The keys `keys_for` gives, fetched again first when the last time is more than the interval ago (a
        kid-less token none of them verified may be signed with a key published since)."""
        if time.monotonic() - self._refetched_at >= self._refetch:
            await self._fetch(refetch=True)  # not more than once per interval, whatever tokens come
        return self._fitting(kid, algorithm)

    def _fitting(self, kid: str | None, algorithm: str) -> list[SigningKey]:
        # a token naming no key is tried with a few at most: each try is a signature check anyone can ask for
        return [k for k in self._keys if (kid is None or k.kid == kid) and k.fits(algorithm)][:MAX_TRIED]

    async def _fetch(self, *, refetch: bool) -> None:
        asked_at = time.monotonic()
        async with self._lock:
            if self._fetched_at >= asked_at:
                return  # someone else fetched while we waited
            if refetch and asked_at - self._refetched_at < self._refetch:
                return
            try:
                uri = self._jwks_uri or await self._discover()
                self._keys = parse_key_set(await get_json(self._client, uri, "JWK set endpoint"))
            except CredentialError as exc:
                log.warning("the signing keys of %s could not be fetched: %s", self._issuer, exc)
                if not self._keys:
                    raise
            finally:
                self._fetched_at = time.monotonic()
                if refetch:
                    self._refetched_at = self._fetched_at

    async def _discover(self) -> str:
        problem: CredentialError | None = None
        for url in metadata_urls(self._issuer):
            try:
                metadata = await get_json(self._client, url, "authorization server metadata endpoint")
            except CredentialError as exc:
                problem = exc
                continue
            uri = metadata.get("jwks_uri")
            if metadata.get("issuer") != self._issuer:  # RFC 8414, section 3.3
                problem = CredentialError(f"the metadata at {url} is not that of {self._issuer}")
            elif isinstance(uri, str) and _acceptable(uri):
                self._jwks_uri = uri
                return uri
            else:
                problem = CredentialError(f"the metadata of {self._issuer} names no jwks_uri")
        assert problem is not None
        raise problem
