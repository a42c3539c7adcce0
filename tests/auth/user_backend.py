"""A REST backend that needs each user's own token: it answers with the user a token belongs to, and 401 to
tokens it does not know (a static table, or JWTs of an identity provider, checked against its keys)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import jwt
from aiohttp import web

from tests.support.live_aiohttp import live_aiohttp


@dataclass
class Accounts:
    tokens: dict[str, str] = field(default_factory=dict)
    """token -> user"""
    issuer: str | None = None
    """JWTs of this issuer are accepted too (their `sub` is the user), for this audience."""
    audience: str = "accounts"
    seen: list[dict[str, str]] = field(default_factory=list)
    """The headers of every call received."""

    def user_of(self, authorization: str | None) -> str | None:
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[7:]
        if token in self.tokens:
            return self.tokens[token]
        if self.issuer is not None and token.count(".") == 2:
            keys = jwt.PyJWKClient(f"{self.issuer}/jwks")
            try:
                key = keys.get_signing_key_from_jwt(token)
                claims = jwt.decode(token, key.key, algorithms=["ES256", "RS256"], audience=self.audience,
                                    issuer=self.issuer)  # fmt: skip
            except jwt.PyJWTError:
                return None
            return str(claims["sub"])
        return None


def app(accounts: Accounts) -> web.Application:
    async def me(request: web.Request) -> web.Response:
        accounts.seen.append(dict(request.headers))
        user = accounts.user_of(request.headers.get("Authorization"))
        if user is None:
            return web.json_response({"error": "unknown token"}, status=401)
        return web.json_response({"user": user, "headers": dict(request.headers)})

    application = web.Application()
    application.router.add_get("/me", me)
    return application


@contextmanager
def running_accounts(accounts: Accounts) -> Iterator[str]:
    with live_aiohttp(lambda: app(accounts)) as base:
        yield base
