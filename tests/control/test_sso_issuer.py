"""A provider whose issuer ends in a slash (Auth0 writes `https://tenant.auth0.com/`): its ID tokens carry it so,
and are checked against the issuer its metadata names, exactly."""

from __future__ import annotations

import time
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from apimcp.sso.id_tokens import IdTokenError, verified_claims
from apimcp.sso.provider import Provider
from apimcp.sso.settings import from_environment

ISSUER = "https://tenant.auth0.test/"


def _provider() -> Provider:
    settings = from_environment({"APIMCP_SSO_ISSUER": ISSUER, "APIMCP_SSO_CLIENT_ID": "console"})
    assert settings is not None and settings.issuer == ISSUER.rstrip("/")  # as the setting keeps it
    provider = Provider(settings)
    metadata = {"issuer": ISSUER, "authorization_endpoint": f"{ISSUER}authorize", "token_endpoint": f"{ISSUER}token",
                "jwks_uri": f"{ISSUER}jwks"}  # fmt: skip

    async def answered(url: str, what: str) -> Any:
        assert url == "https://tenant.auth0.test/.well-known/openid-configuration"
        return metadata

    provider._get = answered  # type: ignore[method-assign]
    return provider


def test_an_id_token_of_an_issuer_ending_in_a_slash_is_accepted_as_its_metadata_names_it() -> None:
    """The finding: the setting's issuer lost its final slash, and ID tokens were checked against it: every sign-in
    through such a provider failed with "Invalid issuer"."""
    issuer = anyio.run(_provider().metadata).issuer
    assert issuer == ISSUER
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = {**jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1"}
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": "ann", "aud": "console", "exp": now + 60, "iat": now, "nonce": "n"}
    token = jwt.encode(claims, key, algorithm="ES256", headers={"kid": "k1"})
    assert verified_claims(token, {"keys": [jwk]}, issuer, "console", "n")["sub"] == "ann"
    with pytest.raises(IdTokenError, match="Invalid issuer"):  # exactly: without the slash is another issuer
        verified_claims(token, {"keys": [jwk]}, ISSUER.rstrip("/"), "console", "n")
