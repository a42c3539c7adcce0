"""The OpenID provider as the control plane reads it: its metadata (OpenID Connect Discovery) and its keys,
fetched with bounds on size and time and kept for `KEEP_SECONDS`; the code exchanged for tokens (with the PKCE
verifier, and the client's secret when it has one)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from apimcp.sso.settings import SsoSettings

MAX_BYTES = 256 * 1024
TIMEOUT_SECONDS = 10.0
KEEP_SECONDS = 300.0


class ProviderError(Exception):
    """The provider could not be read, or answered what a provider should not."""


@dataclass(frozen=True, slots=True)
class Metadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None = None


async def _json(response: aiohttp.ClientResponse, what: str) -> Any:
    body = await response.content.read(MAX_BYTES + 1)
    if len(body) > MAX_BYTES:
        raise ProviderError(f"the provider's {what} is larger than {MAX_BYTES} bytes")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise ProviderError(f"the provider's {what} is not JSON (HTTP {response.status})") from None


class Provider:
    def __init__(self, settings: SsoSettings) -> None:
        self.settings = settings
        self._metadata: tuple[float, Metadata] | None = None
        self._keys: tuple[float, Mapping[str, Any]] | None = None

    def _session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS))

    async def _get(self, url: str, what: str) -> Any:
        async with self._session() as session, session.get(url, allow_redirects=False) as response:
            if response.status != 200:
                raise ProviderError(f"the provider's {what} answered HTTP {response.status}")
            return await _json(response, what)

    async def metadata(self) -> Metadata:
        if self._metadata is not None and time.monotonic() - self._metadata[0] < KEEP_SECONDS:
            return self._metadata[1]
        issuer = self.settings.issuer
        found = await self._get(f"{issuer}/.well-known/openid-configuration", "metadata")
        if not isinstance(found, dict) or str(found.get("issuer", "")).rstrip("/") != issuer:
            raise ProviderError(f"the provider's metadata does not name {issuer} as its issuer")
        try:
            userinfo = found.get("userinfo_endpoint")
            metadata = Metadata(
                str(found["issuer"]),  # as the provider writes it, which its ID tokens' `iss` must match exactly
                authorization_endpoint=str(found["authorization_endpoint"]),
                token_endpoint=str(found["token_endpoint"]),
                jwks_uri=str(found["jwks_uri"]),
                userinfo_endpoint=userinfo if isinstance(userinfo, str) else None,
            )
        except KeyError as missing:
            raise ProviderError(f"the provider's metadata has no {missing}") from None
        methods = found.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods:
            raise ProviderError("the provider does not support PKCE with S256")
        self._metadata = (time.monotonic(), metadata)
        return metadata

    async def keys(self, refresh: bool = False) -> Mapping[str, Any]:
        if not refresh and self._keys is not None and time.monotonic() - self._keys[0] < KEEP_SECONDS:
            return self._keys[1]
        found = await self._get((await self.metadata()).jwks_uri, "key set")
        if not isinstance(found, dict) or not isinstance(found.get("keys"), list):
            raise ProviderError("the provider's key set has no keys")
        self._keys = (time.monotonic(), found)
        return found

    async def userinfo(self, access_token: str) -> Mapping[str, Any]:
        """What the provider's UserInfo endpoint says of the person the access token is for."""
        endpoint = (await self.metadata()).userinfo_endpoint
        if endpoint is None:
            raise ProviderError("the provider has no user info endpoint")
        headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
        async with self._session() as session, session.get(endpoint, headers=headers, allow_redirects=False) as answer:
            if answer.status != 200:
                raise ProviderError(f"the provider's user info answered HTTP {answer.status}")
            found = await _json(answer, "user info")
        if not isinstance(found, dict):
            raise ProviderError("the provider's user info is not an object")
        return found

    async def exchange(self, code: str, verifier: str, redirect_uri: str) -> Mapping[str, Any]:
        """The tokens the code is worth (the provider's answer), or ProviderError saying why not."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": verifier, "client_id": self.settings.client_id}  # fmt: skip
        auth = None
        if self.settings.client_secret is not None:
            auth = aiohttp.BasicAuth(self.settings.client_id, self.settings.client_secret)
        metadata = await self.metadata()
        async with (
            self._session() as session,
            session.post(metadata.token_endpoint, data=form, auth=auth, allow_redirects=False) as response,
        ):
            answer = await _json(response, "token answer")
        if response.status != 200 or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            raise ProviderError(
                f"the provider refused the code (HTTP {response.status}{f': {error}' if error else ''})"
            )
        return answer
