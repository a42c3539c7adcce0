"""Backend access tokens by the OAuth 2.0 client credentials grant (RFC 6749, section 4.4).

A token is fetched on first use and reused until 15 s before it expires;
concurrent calls share one fetch. Failures name the token endpoint's host and
status, never the client secret or the token.
"""

from __future__ import annotations

import asyncio
import base64
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.backends.credentials import Placement

EARLY_RENEWAL_SECONDS = 15
DEFAULT_LIFETIME_SECONDS = 300


class CredentialError(Exception):
    """Backend credentials could not be obtained."""


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()
    audience: str | None = None


class ClientCredentialsTokens:
    """Access tokens for one client, fetched with `session`."""

    def __init__(self, session: aiohttp.ClientSession, credentials: ClientCredentials) -> None:
        self._session = session
        self._credentials = credentials
        self._placement: Placement | None = None
        self._renew_at = 0.0
        self._lock = asyncio.Lock()

    async def placement(self) -> Placement:
        if self._placement is not None and time.monotonic() < self._renew_at:
            return self._placement
        async with self._lock:
            if self._placement is None or time.monotonic() >= self._renew_at:
                await self._fetch()
        assert self._placement is not None
        return self._placement

    async def _fetch(self) -> None:
        c = self._credentials
        host = yarl.URL(c.token_url).host
        if ":" in c.client_id:
            raise CredentialError("the client id contains a ':', which HTTP Basic authentication cannot carry")
        form = {"grant_type": "client_credentials"}
        if c.scopes:
            form["scope"] = " ".join(c.scopes)
        if c.audience:
            form["audience"] = c.audience
        # Built by hand: aiohttp.BasicAuth is deprecated from aiohttp 3.14 and only encodes Latin-1.
        basic = base64.b64encode(f"{c.client_id}:{c.client_secret}".encode()).decode("ascii")
        try:
            async with self._session.post(
                c.token_url,
                data=form,
                headers={"Authorization": f"Basic {basic}", "Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=15),
            ) as response:
                status = response.status
                content = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise CredentialError(f"the token endpoint at {host} could not be reached ({type(exc).__name__})") from exc
        try:
            body, is_json = orjson.loads(content), True
        except orjson.JSONDecodeError:
            body, is_json = None, False
        if status != 200:
            raise CredentialError(f"the token endpoint at {host} answered HTTP {status}" + _oauth_error(body, c))
        if not is_json:
            raise CredentialError(f"the token endpoint at {host} answered with something other than JSON")
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise CredentialError(f"the token endpoint at {host} answered without an access_token")
        lifetime = body.get("expires_in", DEFAULT_LIFETIME_SECONDS)
        lifetime = lifetime if isinstance(lifetime, int | float) and lifetime > 0 else DEFAULT_LIFETIME_SECONDS
        self._renew_at = time.monotonic() + max(5.0, float(lifetime) - EARLY_RENEWAL_SECONDS)
        self._placement = Placement(headers={"Authorization": f"Bearer {token}"})


_ERROR_CODE = re.compile(r"[a-z_]{1,40}")


def _oauth_error(body: Any, credentials: ClientCredentials) -> str:
    """` (invalid_client)`: the OAuth error code of an error answer (RFC 6749, section 5.2), if it has a
    plain one. Its description is left out: servers echo request values there."""
    code = body.get("error") if isinstance(body, dict) else None
    secret = credentials.client_secret
    if not isinstance(code, str) or not _ERROR_CODE.fullmatch(code) or (secret and secret in code):
        return ""
    return f" ({code})"
