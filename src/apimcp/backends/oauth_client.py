"""Backend access tokens by the OAuth 2.0 client credentials grant (RFC 6749, section 4.4).

A token is fetched on first use and reused until 15 s before it expires;
concurrent calls share one fetch. Failures name the token endpoint's host and
status, never the client secret or the token.

The token URL is chosen by whoever wrote the plan, and the gateway posts to it on
their behalf: in a gateway it goes through a `TokenSession`, whose connections reach
only addresses the fetch policy allows (loopback, private and metadata addresses are
refused unless allowed). Redirects are never followed: they would carry the client
secret elsewhere.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.backends.credentials import Placement
from apimcp.backends.http_common import read_limited
from apimcp.safety.addresses import AddressPolicy, AddressRefused, Resolve, system_resolve
from apimcp.safety.resolver import PolicyResolver, check_literal_host

log = logging.getLogger("apimcp.backends")
EARLY_RENEWAL_SECONDS = 15
DEFAULT_LIFETIME_SECONDS = 300
TIMEOUT_SECONDS = 15.0
MAX_TOKEN_RESPONSE_BYTES = 64 * 1024


class CredentialError(Exception):
    """Backend credentials could not be obtained."""


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    scopes: tuple[str, ...] = ()
    audience: str | None = None


class TokenSession:
    """The HTTP session token endpoints are reached with: apart from the backends' own (backends are the plan's
    chosen endpoints and may be internal), its resolver applies the fetch policy, so a token URL reaches only
    allowed addresses, and it connects to the addresses it checked. Opened on first use, in the running loop."""

    def __init__(self, policy: AddressPolicy | None = None, resolve: Resolve = system_resolve) -> None:
        self._policy = policy or AddressPolicy()
        self._resolve = resolve
        self._session: aiohttp.ClientSession | None = None

    def for_url(self, url: str) -> aiohttp.ClientSession:
        """The session to request `url` with; AddressRefused when `url`'s host is a refused address (aiohttp
        connects to an address written in a URL without asking the resolver)."""
        check_literal_host(self._policy, yarl.URL(url).host)
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(resolver=PolicyResolver(self._policy, self._resolve), limit=64)
            self._session = aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


TokenClient = aiohttp.ClientSession | TokenSession
"""What token requests go through: a guarded TokenSession in gateways, or a plain session."""


class ClientCredentialsTokens:
    """Access tokens for one client, fetched with `session`."""

    def __init__(self, session: TokenClient, credentials: ClientCredentials) -> None:
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
            session = self._session.for_url(c.token_url) if isinstance(self._session, TokenSession) else self._session
            async with session.post(
                c.token_url,
                data=form,
                headers={"Authorization": f"Basic {basic}", "Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
                allow_redirects=False,
            ) as response:
                status = response.status
                content = await read_limited(response, MAX_TOKEN_RESPONSE_BYTES)
        except AddressRefused as exc:
            raise CredentialError(f"the token endpoint at {host} is refused: {exc}") from None
        except (aiohttp.ClientError, OSError) as exc:
            # One text whatever happened: the plan's owner must not learn which internal ports are open.
            log.info("token request to %s failed: %s: %s", host, type(exc).__name__, exc)
            raise CredentialError(
                f"the token endpoint at {host} could not be reached within {TIMEOUT_SECONDS:g} s"
            ) from None
        if content is None:
            raise CredentialError(
                f"the token endpoint at {host} answered with more than {MAX_TOKEN_RESPONSE_BYTES} bytes"
            )
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
