"""The token verifier and the key set on their own: tokens made here with local keys (the only place where
hand-built JWTs stand in for an issuer), and a key set server that counts what it is asked."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from apimcp.auth.jwks import KeySet, parse_key_set
from apimcp.auth.settings import OAuthSettingsError, parse_introspection, parse_oauth
from apimcp.auth.verifier import TokenRejected, TokenVerifier
from apimcp.backends.oauth_http import TokenSession
from apimcp.safety.addresses import AddressPolicy
from tests.support.live_aiohttp import live_aiohttp

pytestmark = pytest.mark.anyio
ISSUER = "https://issuer.example"
AUDIENCE = "https://mcp.example/mcp/acme/books"


def _jwk(key: Any, algorithm: type, alg: str, kid: str) -> dict[str, Any]:
    import json

    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()
KEYS = {
    "keys": [
        _jwk(RSA_KEY, RSAAlgorithm, "RS256", "rsa"),
        {**_jwk(RSA_KEY, RSAAlgorithm, "PS256", "rsa-pss")},
        _jwk(EC_KEY, ECAlgorithm, "ES256", "ec"),
        _jwk(ED_KEY, OKPAlgorithm, "EdDSA", "ed"),
    ]
}


class StaticKeys(KeySet):
    """A key set that never fetches: the keys above."""

    def __init__(self) -> None:
        super().__init__(TokenSession(), jwks_uri="https://unused.example/jwks", issuer=ISSUER)
        self._keys = parse_key_set(KEYS)
        self._fetched_at = time.monotonic()
        self._refetched_at = time.monotonic()


def token(key: Any, alg: str, kid: str, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "sub": "alice", "aud": AUDIENCE, "exp": now + 300, "iat": now, "scope": "a b", **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


def verifier(**settings: Any) -> TokenVerifier:
    return TokenVerifier(parse_oauth({"issuers": [ISSUER], **settings}), TokenSession(), {ISSUER: StaticKeys()})


@pytest.mark.parametrize(
    ("key", "alg", "kid"), [(RSA_KEY, "RS256", "rsa"), (RSA_KEY, "PS256", "rsa-pss"), (EC_KEY, "ES256", "ec"),
                            (ED_KEY, "EdDSA", "ed")],
)  # fmt: skip
async def test_every_asymmetric_algorithm_verifies(key: Any, alg: str, kid: str) -> None:
    caller = await verifier().verify(token(key, alg, kid), {AUDIENCE})
    assert (caller.principal, caller.subject, caller.scopes) == (f"{ISSUER} sub=alice", "alice", frozenset({"a", "b"}))


@pytest.mark.parametrize(
    ("made", "words"),
    [
        (lambda: token(EC_KEY, "ES256", "rsa"), "signing key is unknown"),  # an EC token naming the RSA key
        (lambda: token(RSA_KEY, "RS256", "ec"), "signing key is unknown"),
        (lambda: token(EC_KEY, "ES256", "ec", exp=int(time.time()) - 120), "has expired"),
        (lambda: token(EC_KEY, "ES256", "ec", nbf=int(time.time()) + 600), "not valid yet"),
        (lambda: token(EC_KEY, "ES256", "ec", exp=None), "not valid"),
        (lambda: token(EC_KEY, "ES256", "ec", iss="https://other.example"), "does not trust"),
        (lambda: token(EC_KEY, "ES256", "ec", aud="https://mcp.example/mcp/acme/other"), "another resource"),
        (lambda: token(EC_KEY, "ES256", "ec", aud=None), "names no audience"),
        (lambda: jwt.encode({"iss": ISSUER, "exp": 9e9}, "k" * 32, algorithm="HS256"), "'HS256', which is not"),
        (lambda: "not-a-jwt", "not a JWT, and no introspection"),
        (lambda: "ey" + "a" * 20_000 + ".b.c", "longer than"),
    ],
)
async def test_tokens_that_must_not_pass_are_refused_with_the_reason(made: Any, words: str) -> None:
    with pytest.raises(TokenRejected, match=words):
        await verifier().verify(made(), {AUDIENCE})


async def test_a_token_of_another_type_is_not_an_access_token() -> None:
    id_token = jwt.encode({"iss": ISSUER, "sub": "a", "aud": AUDIENCE, "exp": int(time.time()) + 60}, EC_KEY,
                          algorithm="ES256", headers={"kid": "ec", "typ": "id_token+jwt"})  # fmt: skip
    with pytest.raises(TokenRejected, match="is not an access token"):
        await verifier().verify(id_token, {AUDIENCE})


async def test_audiences_configured_or_unchecked() -> None:
    elsewhere = token(EC_KEY, "ES256", "ec", aud="urn:books")
    assert (await verifier(audiences=["urn:books"]).verify(elsewhere, {AUDIENCE})).subject == "alice"
    assert (await verifier(audience_check=False).verify(elsewhere, {AUDIENCE})).subject == "alice"


async def test_a_verified_token_is_remembered_until_it_expires_and_still_checked_for_its_audience() -> None:
    checking = verifier()
    good = token(EC_KEY, "ES256", "ec")
    first = await checking.verify(good, {AUDIENCE})
    assert await checking.verify(good, {AUDIENCE}) is first  # from the cache
    with pytest.raises(TokenRejected, match="another resource"):
        await checking.verify(good, {"https://mcp.example/mcp/acme/other"})


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"issuers": []}, "oauth.issuers"),
        ({"issuers": ["ftp://x"]}, "oauth.issuers"),
        ({"issuers": [ISSUER], "algorithms": ["none"]}, "oauth.algorithms"),
        ({"issuers": [ISSUER], "leeway_seconds": 3600}, "oauth.leeway_seconds"),
        ({"issuers": [ISSUER], "scopes": ['bad"scope']}, "oauth.scopes"),
        ({"issuers": [ISSUER], "colour": "red"}, "oauth.colour"),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_field(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(OAuthSettingsError) as refused:
        parse_oauth(settings)
    assert refused.value.field == field


@pytest.fixture
def key_server() -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []

    def make() -> web.Application:
        async def jwks(request: web.Request) -> web.Response:
            asked.append(request.path)
            return web.json_response(KEYS)

        async def metadata(request: web.Request) -> web.Response:
            asked.append(request.path)
            base = f"http://{request.host}"
            return web.json_response({"issuer": base, "jwks_uri": f"{base}/keys"})

        app = web.Application()
        app.router.add_get("/keys", jwks)
        app.router.add_get("/.well-known/oauth-authorization-server", metadata)
        return app

    with live_aiohttp(make) as base:
        yield base, asked


async def test_keys_are_found_from_the_issuer_s_metadata_and_a_flood_of_unknown_kids_costs_one_fetch(
    key_server: tuple[str, list[str]],
) -> None:
    base, asked = key_server
    session = TokenSession(AddressPolicy.allowing(["127.0.0.1"]))
    try:
        keys = KeySet(session, jwks_uri=None, issuer=base, refetch_seconds=60)
        assert [key.kid for key in await keys.keys_for("ec", "ES256")] == ["ec"]
        assert asked == ["/.well-known/oauth-authorization-server", "/keys"]
        for made_up in range(50):
            with pytest.raises(Exception, match="no key of the issuer has id"):
                await keys.keys_for(f"made-up-{made_up}", "ES256")
        assert asked.count("/keys") == 2  # the first unknown kid asked again; the other 49 did not
    finally:
        await session.close()


async def test_keys_on_a_refused_address_are_never_fetched(key_server: tuple[str, list[str]]) -> None:
    base, asked = key_server
    session = TokenSession()  # the default policy: public addresses only
    try:
        keys = KeySet(session, jwks_uri=f"{base}/keys", issuer=base)
        with pytest.raises(Exception, match="is refused"):
            await keys.keys_for("ec", "ES256")
        assert asked == []
    finally:
        await session.close()


@pytest.mark.parametrize("signature", ["A", "AAAAA", "**"])
async def test_a_signature_that_is_not_base64url_is_a_malformed_token(signature: str) -> None:
    header, payload, _ = token(EC_KEY, "ES256", "ec").split(".")
    with pytest.raises(TokenRejected, match="not a readable JWT") as refused:
        await verifier().verify(f"{header}.{payload}.{signature}", {AUDIENCE})
    assert refused.value.reason == "malformed_token"


async def test_a_token_naming_neither_a_subject_nor_a_client_is_refused() -> None:
    with pytest.raises(TokenRejected, match="neither a subject nor a client"):
        await verifier().verify(token(EC_KEY, "ES256", "ec", sub=None), {AUDIENCE})


@pytest.mark.parametrize("subject", [1001, "", ["alice"], {"id": "alice"}, True])
async def test_a_subject_that_is_no_text_is_refused_not_read_as_the_client(subject: object) -> None:
    """The finding: `sub: 1001` fell back to the client id, so every user of that client was one caller (their
    sessions, rate limits and per-user credentials shared)."""
    with pytest.raises(TokenRejected, match=r"subject \(sub\) is not a non-empty string"):
        await verifier().verify(token(EC_KEY, "ES256", "ec", sub=subject, client_id="chat-app"), {AUDIENCE})


async def test_subjects_and_clients_never_share_a_principal() -> None:
    as_subject = await verifier().verify(token(EC_KEY, "ES256", "ec", sub="client=x"), {AUDIENCE})
    as_client = await verifier().verify(token(EC_KEY, "ES256", "ec", sub=None, client_id="x"), {AUDIENCE})
    assert as_subject.principal != as_client.principal


@asynccontextmanager
async def _introspecting(answer: Callable[[], dict[str, Any]], **oauth: Any) -> AsyncIterator[TokenVerifier]:
    """A verifier of opaque tokens whose introspection endpoint answers `answer()`."""

    async def introspect(request: web.Request) -> web.Response:
        return web.json_response(answer())

    def make() -> web.Application:
        app = web.Application()
        app.router.add_post("/introspect", introspect)
        return app

    with live_aiohttp(make) as base:
        introspection = parse_introspection({"url": f"{base}/introspect", "client_id": "gw", "client_secret": "s"})
        settings = parse_oauth({"issuers": [ISSUER], **oauth}, introspection=introspection)
        session = TokenSession(AddressPolicy.allowing(["127.0.0.1"]))
        try:
            yield TokenVerifier(settings, session, {ISSUER: StaticKeys()})
        finally:
            await session.close()


@pytest.mark.parametrize(
    ("token_type", "audience_check", "accepted"),
    [("Bearer", True, True), ("Bearer", False, True), ("DPoP", False, True), ("refresh_token", True, False),
     ("Refresh", False, False), (None, True, True), (None, False, False)],
)  # fmt: skip
async def test_an_introspected_token_is_taken_only_as_an_access_token(
    token_type: str | None, audience_check: bool, accepted: bool
) -> None:
    """The finding: with `audience_check: false`, a refresh token (oidc-provider's introspection answer names no
    token_type for one, and no audience) was taken as an access token, for its much longer lifetime."""

    def answer() -> dict[str, Any]:
        said = {"active": True, "sub": "alice", "client_id": "desktop", "scope": "mcp:read",
                "exp": int(time.time()) + 3600, "aud": AUDIENCE}  # fmt: skip
        return said if token_type is None else {**said, "token_type": token_type}

    async with _introspecting(answer, audience_check=audience_check) as verifying:
        checking = verifying.verify("opaque-0123456789", {AUDIENCE})
        if accepted:
            assert (await checking).subject == "alice"
        else:
            with pytest.raises(TokenRejected, match="access token"):
                await checking


async def test_an_expired_opaque_token_is_introspected_once_a_minute_not_on_every_request() -> None:
    """The finding: the expired entry of the verified tokens was found before the refusal that replaced it, so every
    request with the token called the introspection endpoint again."""
    asked: list[str] = []
    lifetime = {"exp": int(time.time()) + 3600}

    def answer() -> dict[str, Any]:
        asked.append("introspect")
        return {"active": time.time() < lifetime["exp"], "sub": "alice", "token_type": "Bearer",
                "exp": lifetime["exp"], "aud": AUDIENCE}  # fmt: skip

    async with _introspecting(answer, leeway_seconds=0) as verifying:
        assert (await verifying.verify("opaque-0123456789", {AUDIENCE})).subject == "alice"
        lifetime["exp"] = int(time.time()) - 1  # it expired meanwhile: the cached entry is stale
        verifying._cache["opaque-0123456789"] = replace(verifying._cache["opaque-0123456789"], until=0.0)
        for _ in range(20):
            with pytest.raises(TokenRejected, match="not active"):
                await verifying.verify("opaque-0123456789", {AUDIENCE})
        assert asked == ["introspect", "introspect"]


async def test_keys_that_cannot_be_fetched_are_an_outage_told_without_internal_details(
    key_server: tuple[str, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    """The finding: the 401's description named the key set's internal host and the gateway's fetch settings."""
    base, _ = key_server
    session = TokenSession()  # the default policy: public addresses only, so the loopback key set is refused
    try:
        settings = parse_oauth({"issuers": [base], "jwks_uri": f"{base}/keys"})
        with pytest.raises(TokenRejected) as refused:
            await TokenVerifier(settings, session).verify(token(EC_KEY, "ES256", "ec", iss=base), {AUDIENCE})
        assert (refused.value.reason, str(refused.value)) == (
            "invalid_jwks_uri",
            "the issuer's signing keys could not be fetched",
        )
        assert "127.0.0.1" in caplog.text  # the detail is for the operator
    finally:
        await session.close()


async def test_a_token_naming_no_key_is_checked_against_each_key_that_fits() -> None:
    """The finding: only the first key of the right type was tried, so a token signed with the issuer's second key
    (a rotation in progress) was refused, and the keys never fetched again for it."""
    newer = ec.generate_private_key(ec.SECP256R1())
    keys = StaticKeys()
    both = [_jwk(EC_KEY, ECAlgorithm, "ES256", "old"), _jwk(newer, ECAlgorithm, "ES256", "new")]
    keys._keys = parse_key_set({"keys": both})
    checking = TokenVerifier(parse_oauth({"issuers": [ISSUER]}), TokenSession(), {ISSUER: keys})
    unnamed = jwt.encode({"iss": ISSUER, "sub": "alice", "aud": AUDIENCE, "exp": int(time.time()) + 300}, newer,
                         algorithm="ES256")  # fmt: skip
    assert (await checking.verify(unnamed, {AUDIENCE})).subject == "alice"
    stranger = ec.generate_private_key(ec.SECP256R1())
    forged = jwt.encode({"iss": ISSUER, "sub": "eve", "aud": AUDIENCE, "exp": int(time.time()) + 300}, stranger,
                        algorithm="ES256")  # fmt: skip
    with pytest.raises(TokenRejected, match="signature does not verify"):
        await checking.verify(forged, {AUDIENCE})
