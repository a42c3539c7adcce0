"""An ID token checked as OpenID Connect Core 3.1.3.7 asks: signed by one of the provider's keys with an
asymmetric algorithm, issued by the provider, for this client, not expired, carrying the sign-in's nonce; then
who it names: the subject, and an e-mail address the provider did not say is unverified."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jwt

ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
LEEWAY_SECONDS = 60


class IdTokenError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Person:
    issuer: str
    subject: str
    email: str
    name: str | None


def _key(keys: Mapping[str, Any], token: str) -> Any:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise IdTokenError("the ID token is not a JWT") from None
    if header.get("alg") not in ALGORITHMS:
        raise IdTokenError(f"the ID token is signed with {header.get('alg')!r}, which is not accepted")
    candidates = [k for k in keys.get("keys", []) if isinstance(k, dict) and k.get("kid") == header.get("kid")]
    if not candidates:
        raise IdTokenError("the ID token's key is not in the provider's key set")
    try:
        return jwt.PyJWK.from_dict(candidates[0]).key
    except jwt.PyJWTError:
        raise IdTokenError("the provider's key is not one apimcp can use") from None


def verified_claims(token: str, keys: Mapping[str, Any], issuer: str, client_id: str, nonce: str) -> dict[str, Any]:
    try:
        claims: dict[str, Any] = jwt.decode(
            token, _key(keys, token), algorithms=ALGORITHMS, audience=client_id, issuer=issuer,
            leeway=LEEWAY_SECONDS, options={"require": ["iss", "sub", "aud", "exp", "iat"]},
        )  # fmt: skip
    except jwt.PyJWTError as exc:
        raise IdTokenError(f"the ID token is not valid: {exc}") from None
    if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
        raise IdTokenError("the ID token is not for this sign-in (its nonce differs)")
    return claims


def has_email(claims: Mapping[str, Any]) -> bool:
    return isinstance(claims.get("email"), str)


def person_of(claims: Mapping[str, Any], userinfo: Mapping[str, Any] | None = None) -> Person:
    """Who the verified ID token's claims name; `userinfo` (the provider's UserInfo answer, when the ID token
    carries no e-mail address) adds what they lack, only if it names the same subject (OIDC Core 5.3.2)."""
    said = dict(claims)
    if userinfo is not None:
        if userinfo.get("sub") != claims.get("sub"):
            raise IdTokenError("the provider's user info names another person than the ID token")
        for key in ("email", "email_verified", "name"):
            if key in userinfo and key not in claims:
                said[key] = userinfo[key]
    email = said.get("email")
    if not isinstance(email, str) or "@" not in email or said.get("email_verified") is False:
        raise IdTokenError("the provider gave no verified e-mail address: ask for the email scope to be allowed")
    name = said.get("name")
    return Person(
        str(claims["iss"]), str(claims["sub"]), email.strip().lower(), name if isinstance(name, str) else None
    )
