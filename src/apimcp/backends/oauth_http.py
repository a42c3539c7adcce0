"""The HTTP exchanges of OAuth 2.0 a gateway makes on someone's behalf: a form posted to a token, introspection
or exchange endpoint, a JSON document (JWKS, server metadata) fetched.

Every exchange goes through a `TokenClient` (in gateways a guarded `TokenSession`: only addresses the fetch
policy allows, connected at the checked address), follows no redirect (it would carry a client secret
elsewhere), reads at most `MAX_RESPONSE_BYTES` within one total deadline, and fails with one `CredentialError`
text whatever the network did, so that nobody learns which internal ports are open. Errors name the host and
the OAuth error code, never a secret, a token or the server's free-text description (servers echo requests).
"""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import quote_plus

import aiohttp
import orjson
import yarl

from apimcp.backends.http_common import read_limited
from apimcp.safety.addresses import AddressPolicy, AddressRefused, Resolve, system_resolve
from apimcp.safety.resolver import PolicyResolver, check_literal_host

log = logging.getLogger("apimcp.backends")
TIMEOUT_SECONDS = 15.0
MAX_RESPONSE_BYTES = 256 * 1024
_ERROR_CODE = re.compile(r"[a-z_]{1,40}")


class CredentialError(Exception):
    """Credentials could not be obtained or checked; `oauth_error`: the OAuth error code the server answered, when
    it answered one (RFC 6749 5.2: `invalid_grant` says a refresh token is dead, a 503 or a timeout does not)."""

    def __init__(self, message: str, oauth_error: str | None = None) -> None:
        super().__init__(message)
        self.oauth_error = oauth_error


class SharedValues(Protocol):
    """A store of small sealed values with a lifetime, shared by replicas (the gateway's user-value store)."""

    async def get(self, owner: str, key: str) -> dict[str, Any] | None: ...

    async def put(self, owner: str, key: str, value: dict[str, Any], ttl_seconds: float | None = None) -> None: ...


class TokenSession:
    """The HTTP session token endpoints are reached with: apart from the backends' own (backends are the plan's
    chosen endpoints and may be internal), its resolver applies the fetch policy, so a token URL reaches only
    allowed addresses, and it connects to the addresses it checked. Opened on first use, in the running loop."""

    def __init__(
        self, policy: AddressPolicy | None = None, resolve: Resolve = system_resolve, shared: SharedValues | None = None
    ) -> None:
        self._policy = policy or AddressPolicy()
        self._resolve = resolve
        self._session: aiohttp.ClientSession | None = None
        self.shared = shared
        """Where tokens obtained for backends are kept for every replica (sealed at rest), if anywhere."""

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
"""What OAuth requests go through: a guarded TokenSession in gateways, or a plain session."""


def basic_authorization(client_id: str, client_secret: str) -> str:
    """`Basic …` for client_secret_basic (RFC 6749, section 2.3.1: both parts form-encoded first, so a `+`, `%` or
    `:` in them reaches the server as it is: a server decodes them, and `abc+def` sent raw was read as `abc def`)."""
    # Built by hand: aiohttp.BasicAuth is deprecated from aiohttp 3.14 and only encodes Latin-1.
    pair = f"{quote_plus(client_id)}:{quote_plus(client_secret)}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def host_of(url: str) -> str:
    """The host a URL names, for messages."""
    try:
        return yarl.URL(url).host or "a URL without a host"
    except ValueError:
        return "a URL that is not valid"


async def _exchange(
    client: TokenClient,
    method: str,
    url: str,
    what: str,
    *,
    headers: Mapping[str, str],
    form: Mapping[str, str] | None,
    document: Mapping[str, Any] | None = None,
) -> tuple[int, Any, bool]:
    host = host_of(url)
    if document is not None:
        headers = {**headers, "Content-Type": "application/json"}
    try:
        session = client.for_url(url) if isinstance(client, TokenSession) else client
        async with session.request(
            method,
            url,
            data=dict(form) if form is not None else orjson.dumps(document) if document is not None else None,
            headers={"Accept": "application/json", **headers},
            timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS),
            allow_redirects=False,
        ) as response:
            status = response.status
            content = await read_limited(response, MAX_RESPONSE_BYTES)
    except AddressRefused as exc:
        raise CredentialError(f"the {what} at {host} is refused: {exc}") from None
    except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as exc:
        log.info("%s request to %s failed: %s", what, host, type(exc).__name__)
        raise CredentialError(f"the {what} at {host} could not be reached within {TIMEOUT_SECONDS:g} s") from None
    if content is None:
        raise CredentialError(f"the {what} at {host} answered with more than {MAX_RESPONSE_BYTES} bytes")
    try:
        return status, orjson.loads(content), True
    except orjson.JSONDecodeError:
        return status, None, False


async def post_form(
    client: TokenClient,
    url: str,
    form: Mapping[str, str],
    what: str,
    *,
    authorization: str | None = None,
    secrets: tuple[str, ...] = (),
) -> dict[str, Any]:
    """POST `form` to `url` (the `what`: "token endpoint", "introspection endpoint"…); its JSON object answer.
    `secrets` are values an error code must not repeat."""
    headers = {"Authorization": authorization} if authorization else {}
    status, body, is_json = await _exchange(client, "POST", url, what, headers=headers, form=form)
    host = host_of(url)
    if status != 200:
        code = oauth_error_code(body, secrets)
        raise CredentialError(f"the {what} at {host} answered HTTP {status}" + code, code.strip(" ()") or None)
    if not is_json:
        raise CredentialError(f"the {what} at {host} answered with something other than JSON")
    return body if isinstance(body, dict) else {}  # what it lacks is named by the caller


async def post_json(client: TokenClient, url: str, document: Mapping[str, Any], what: str) -> dict[str, Any]:
    """POST a JSON object (a client registration, RFC 7591); its JSON object answer (200 or 201)."""
    status, body, is_json = await _exchange(client, "POST", url, what, headers={}, form=None, document=document)
    host = host_of(url)
    if status not in (200, 201):
        raise CredentialError(f"the {what} at {host} answered HTTP {status}" + oauth_error_code(body))
    if not is_json or not isinstance(body, dict):
        raise CredentialError(f"the {what} at {host} answered with something other than a JSON object")
    return body


async def get_json(client: TokenClient, url: str, what: str) -> dict[str, Any]:
    """GET a JSON object (a JWK set, authorization server metadata)."""
    status, body, is_json = await _exchange(client, "GET", url, what, headers={}, form=None)
    host = host_of(url)
    if status != 200:
        raise CredentialError(f"the {what} at {host} answered HTTP {status}")
    if not is_json or not isinstance(body, dict):
        raise CredentialError(f"the {what} at {host} answered with something other than a JSON object")
    return body


def oauth_error_code(body: Any, secrets: tuple[str, ...] = ()) -> str:
    """` (invalid_client)`: the OAuth error code of an error answer (RFC 6749, section 5.2), if it has a
    plain one. Its description is left out: servers echo request values there."""
    code = body.get("error") if isinstance(body, dict) else None
    if not isinstance(code, str) or not _ERROR_CODE.fullmatch(code) or any(s and s in code for s in secrets):
        return ""
    return f" ({code})"
