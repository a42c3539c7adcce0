"""Access tokens checked: JWTs against the issuer's keys, opaque tokens by introspection; the answer cached.

A JWT (three dot-separated parts whose header names an algorithm) is read once, here (PyJWT's own decoding
reads a token three times over to learn its header and issuer first, and checks its base64 one character at
a time: a quarter of the cost), and its signature verified by PyJWT's implementation of its algorithm: the
header's `alg` must be one of the settings' asymmetric algorithms (never `none`, never HS*), and the key,
found by `kid` in the issuer's JWK set, must be of the type and curve that algorithm needs. Then `iss` must
be an allowed issuer, `exp` (required) and `nbf` hold within the leeway, and `aud` names this exposition (one
of its URLs, or a configured audience). Which issuer's keys to use is read from the unverified `iss`: it only
picks among allowed issuers, and the signature then decides.

Anything else is an opaque token: introspected (RFC 7662) when the settings say where, refused otherwise.

A verified token is remembered until it expires, in a bounded cache keyed by the token itself, so a client
that sends the same token on every request costs one dictionary lookup after the first. Refusals of
introspected tokens are remembered briefly too: a flood of made-up tokens costs the authorization server one
request per distinct token and minute, at most `MAX_CACHED` at a time.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import orjson
from jwt.algorithms import get_default_algorithms

from apimcp.auth.jwks import KeyNotFound, KeySet
from apimcp.auth.settings import ALGORITHMS, OAuthSettings
from apimcp.backends.oauth_http import CredentialError, TokenClient, basic_authorization, post_form
from apimcp.protocol.caller import Caller

log = logging.getLogger("apimcp.auth")

MAX_CACHED = 10_000
NEGATIVE_SECONDS = 60.0
MAX_TOKEN_BYTES = 16 * 1024
_MAX_CONCURRENT_INTROSPECTIONS = 16


class TokenRejected(Exception):
    """The token is not accepted; `reason` is a short code for audit trails, the message says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Cached:
    caller: Caller | None
    until: float
    audiences: tuple[str, ...] = ()
    rejection: TokenRejected | None = None


def _scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """`scope` (space-separated) or `scp` (a string or a list), as issuers write them."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return frozenset(raw.split())
    if isinstance(raw, list):
        return frozenset(s for s in raw if isinstance(s, str))
    return frozenset()


def caller_of(issuer: str, claims: Mapping[str, Any], until: float | None = None, token: str | None = None) -> Caller:
    """The caller a verified token from `issuer` with these claims (a JWT's, an introspection's answer) stands
    for; TokenRejected when they name neither a subject nor a client."""
    subject = claims.get("sub")
    if subject is not None and not (isinstance(subject, str) and subject):
        # never read as "no subject": every user of the client would be one caller (sessions, limits, credentials)
        raise TokenRejected("invalid_token", "the access token's subject (sub) is not a non-empty string")
    subject_text = subject
    client = claims.get("client_id") or claims.get("azp")
    if subject_text is None and not (isinstance(client, str) and client):
        raise TokenRejected("invalid_token", "the access token names neither a subject nor a client")
    # `sub=` and `client=` never collide, whatever a subject holds (issuers hold no space: they are URLs).
    who = f"sub={subject_text}" if subject_text is not None else f"client={client}"
    return Caller(
        principal=f"{issuer} {who}",
        scopes=_scopes_of(claims),
        subject=subject_text,
        issuer=issuer,
        token=token,
        expires_at=until,
        claims=claims,
    )


_ACCESS_TOKEN_TYPES = frozenset({"bearer", "dpop", "n_a", "access_token"})
"""An introspection answer's `token_type` for an access token: a type of RFC 6749 section 7.1 (bearer, DPoP), or
what some servers write; a refresh token's is absent or names it (`refresh_token`, `Refresh`)."""


def _audiences(claims: Mapping[str, Any]) -> list[str]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list):
        return [a for a in aud if isinstance(a, str)]
    return []


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and token[:2] == "ey"


_SEGMENT = re.compile(r"[A-Za-z0-9_-]*")
_VERIFIERS = {name: algorithm for name, algorithm in get_default_algorithms().items() if name in ALGORITHMS}
"""PyJWT's implementation of each accepted algorithm (it turns JOSE's raw ECDSA signatures into DER, etc.)."""


def _segment(text: str) -> bytes:
    if not _SEGMENT.fullmatch(text) or len(text) % 4 == 1:  # a length no base64 text has
        raise TokenRejected("malformed_token", "the access token is not a readable JWT (not base64url)")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TokenRejected("malformed_token", "the access token is not a readable JWT (not base64url)") from None


def read_jwt(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    """Header, claims, signing input and signature of a compact JWS, read once (the signature is checked by
    the caller, with the key the header names)."""
    encoded_header, encoded_claims, encoded_signature = token.split(".")
    try:
        header, claims = orjson.loads(_segment(encoded_header)), orjson.loads(_segment(encoded_claims))
    except (orjson.JSONDecodeError, ValueError):
        raise TokenRejected("malformed_token", "the access token is not a readable JWT (not JSON)") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenRejected("malformed_token", "the access token is not a readable JWT (not JSON objects)")
    signing_input = f"{encoded_header}.{encoded_claims}".encode("ascii")
    return header, claims, signing_input, _segment(encoded_signature)


class TokenVerifier:
    """Checks the access tokens of one exposition's settings."""

    def __init__(self, settings: OAuthSettings, client: TokenClient, keys: Mapping[str, KeySet] | None = None) -> None:
        """`keys`: the key set of each issuer (built here when not given; tests share theirs)."""
        self.settings = settings
        self._client = client
        self._keys = dict(keys) if keys is not None else {
            issuer: KeySet(client, jwks_uri=settings.jwks_uri, issuer=issuer) for issuer in settings.issuers
        }  # fmt: skip
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        """Verified tokens, least recently used first."""
        self._refusals: OrderedDict[str, _Cached] = OrderedDict()
        """Introspected tokens refused lately (apart: made-up tokens never push verified ones out)."""
        self._static_audiences = frozenset(settings.audiences)
        self._introspecting = asyncio.Semaphore(_MAX_CONCURRENT_INTROSPECTIONS)

    async def verify(self, token: str, audiences: AbstractSet[str]) -> Caller:
        """The caller `token` authenticates for a resource known by `audiences` (or a configured audience);
        TokenRejected otherwise."""
        now = time.time()
        entry = self._cache.get(token) or self._refusals.get(token)
        if entry is None or now >= entry.until:
            entry = await self._check(token, now)
        elif entry.rejection is None:
            self._cache.move_to_end(token)
        if entry.rejection is not None:
            raise entry.rejection
        assert entry.caller is not None
        if self.settings.audience_check:
            if not entry.audiences:
                raise TokenRejected("forbidden_audience", "the access token names no audience (aud)")
            if audiences.isdisjoint(entry.audiences) and self._static_audiences.isdisjoint(entry.audiences):
                raise TokenRejected("forbidden_audience", "the access token was issued for another resource (aud)")
        return entry.caller

    async def _check(self, token: str, now: float) -> _Cached:
        if len(token) > MAX_TOKEN_BYTES:
            raise TokenRejected("malformed_token", f"the access token is longer than {MAX_TOKEN_BYTES} bytes")
        if looks_like_jwt(token):
            caller, claims = await self._verify_jwt(token, now)
        elif self.settings.introspection is not None:
            caller, claims = await self._introspect(token, now)
        else:
            raise TokenRejected("malformed_token", "the access token is not a JWT, and no introspection is set up")
        entry = _Cached(caller, caller.expires_at or now + NEGATIVE_SECONDS, tuple(_audiences(claims)))
        self._remember(token, entry)
        return entry

    def _remember(self, token: str, entry: _Cached) -> None:
        cache, other = (self._cache, self._refusals) if entry.rejection is None else (self._refusals, self._cache)
        other.pop(token, None)  # a stale entry in the other would be found first, and checked again every time
        cache[token] = entry
        cache.move_to_end(token)
        while len(cache) > MAX_CACHED:
            cache.popitem(last=False)

    async def _verify_jwt(self, token: str, now: float) -> tuple[Caller, Mapping[str, Any]]:
        settings = self.settings
        header, claims, signing_input, signature = read_jwt(token)
        algorithm = header.get("alg")
        if algorithm not in settings.algorithms:
            raise TokenRejected(
                "invalid_token", f"the access token is signed with {algorithm!r}, which is not accepted"
            )
        typ = header.get("typ")
        if typ is not None and str(typ).lower() not in ("jwt", "at+jwt", "application/at+jwt"):
            raise TokenRejected("invalid_token", f"a JWT of type {typ!r} is not an access token")
        issuer = claims.get("iss")
        keys = self._keys.get(issuer) if isinstance(issuer, str) else None
        if keys is None or not isinstance(issuer, str):
            raise TokenRejected("invalid_token", "the access token comes from an issuer this exposition does not trust")
        kid = header.get("kid")
        named = kid if isinstance(kid, str) else None
        verifier = _VERIFIERS[algorithm]
        try:
            candidates = await keys.keys_for(named, algorithm)
            verified = any(verifier.verify(signing_input, key.key, signature) for key in candidates)
            if not verified and named is None:  # signed with a key published since the keys were read, perhaps
                fresh = [key for key in await keys.fetched_again(None, algorithm) if key not in candidates]
                verified = any(verifier.verify(signing_input, key.key, signature) for key in fresh)
        except KeyNotFound as exc:
            raise TokenRejected("invalid_token", f"the access token's signing key is unknown: {exc}") from None
        except CredentialError as exc:
            log.warning("the signing keys of %s could not be fetched: %s", issuer, exc)
            raise TokenRejected("invalid_jwks_uri", "the issuer's signing keys could not be fetched") from None
        if not verified:
            raise TokenRejected("invalid_token", "the access token's signature does not verify")
        leeway = settings.leeway_seconds
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise TokenRejected("invalid_token", "the access token is not valid (it has no exp)")
        if now >= exp + leeway:
            raise TokenRejected("invalid_token", "the access token has expired")
        if nbf is not None and (not isinstance(nbf, int | float) or isinstance(nbf, bool) or now + leeway < nbf):
            raise TokenRejected("invalid_token", "the access token is not valid yet (nbf)")
        return caller_of(issuer, claims, float(exp) + leeway, token), claims

    async def _introspect(self, token: str, now: float) -> tuple[Caller, Mapping[str, Any]]:
        introspection = self.settings.introspection
        assert introspection is not None
        authorization = basic_authorization(introspection.client_id, introspection.client_secret)
        async with self._introspecting:
            try:
                answer = await post_form(
                    self._client,
                    introspection.url,
                    {"token": token, "token_type_hint": "access_token"},
                    "introspection endpoint",
                    authorization=authorization,
                    secrets=(introspection.client_secret, token),
                )
            except CredentialError as exc:
                log.warning("a token could not be introspected: %s", exc)
                raise TokenRejected("introspection_failed", "the access token could not be checked") from None
        if answer.get("active") is not True:
            self._refuse_for_a_while(token, now, TokenRejected("invalid_token", "the access token is not active"))
        kind = answer.get("token_type")
        if isinstance(kind, str) and kind.lower() not in _ACCESS_TOKEN_TYPES:
            self._refuse_for_a_while(token, now, TokenRejected("invalid_token", "the token is not an access token"))
        if kind is None and not self.settings.audience_check:  # its audience cannot tell an access token either
            self._refuse_for_a_while(token, now, TokenRejected(
                "invalid_token", "the introspection answer does not say the token is an access token (token_type), "
                "and audience_check is off: nothing tells it from a refresh token"))  # fmt: skip
        issuer = answer.get("iss")
        if issuer is None and len(self.settings.issuers) == 1:
            issuer = self.settings.issuers[0]  # RFC 7662 makes `iss` optional: the one trusted issuer answered
        if issuer not in self.settings.issuers:
            self._refuse_for_a_while(
                token, now, TokenRejected("invalid_token", "the access token comes from an issuer not trusted here")
            )
        exp = answer.get("exp")
        if not isinstance(exp, int | float) or exp + self.settings.leeway_seconds <= now:
            self._refuse_for_a_while(
                token, now, TokenRejected("invalid_token", "the access token has expired, or says no expiry")
            )
        assert isinstance(issuer, str)
        assert isinstance(exp, int | float)
        return caller_of(issuer, answer, float(exp), token), answer

    def _refuse_for_a_while(self, token: str, now: float, rejection: TokenRejected) -> None:
        self._remember(token, _Cached(None, now + NEGATIVE_SECONDS, rejection=rejection))
        raise rejection
