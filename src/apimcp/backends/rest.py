"""Calling REST operations over one shared aiohttp session.

Failures never escape as exceptions: an error status, a timeout, a refused
connection or an unresolvable host becomes a `Failure` that names the cause
(and never the credentials). Responses are read up to a size limit, and their
bytes masked at once (credential values a backend echoes become `***`).
Redirects are followed within the backend's origin only (`redirects.py`).

Backends may be internal, never a cloud metadata address: the shared session's
resolver refuses names that resolve to one, and each backend refuses hosts written
as one (aiohttp does not ask its resolver about those).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
from collections.abc import Mapping
from typing import Any, Final

import aiohttp
import orjson
import yarl

from apimcp.backends import lane
from apimcp.backends.access import Access, BackendAccess, GivenCredentials
from apimcp.backends.base import (
    Backend,
    BackendResult,
    BinaryBody,
    CallExtras,
    EmptyBody,
    Failure,
    JsonBody,
    Progress,
    TextBody,
    UnparsedJson,
    unpassable,
    unread_json,
)
from apimcp.backends.http_common import (
    CALL_ERRORS,
    exception_failure,
    origin,
    read_limited,
    status_failure,
    too_large,
    unread_coding,
)
from apimcp.backends.oauth_client import CredentialError, TokenClient
from apimcp.backends.redirects import (
    DEFAULT_MAX_REDIRECTS,
    Outgoing,
    Redirect,
    follow,
)
from apimcp.backends.rest_request import InvalidArgument, build_request
from apimcp.backends.targets import url_address_problem
from apimcp.backends.tls import TlsSettings, client_context
from apimcp.catalog.base_urls import described_base_url
from apimcp.catalog.media import media_charset, media_kind
from apimcp.catalog.model import Operation, RestBinding, Service
from apimcp.http1.client import Http1Client
from apimcp.safety.addresses import ANYTHING_BUT_METADATA, Resolve, system_resolve
from apimcp.safety.json_parsing import parse_json
from apimcp.safety.masking import SecretMask
from apimcp.safety.resolver import PolicyResolver
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

log = logging.getLogger("apimcp.backends")

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024


def new_session(limit: int = 256, resolve: Resolve = system_resolve) -> aiohttp.ClientSession:
    """The one client session a gateway shares between all its REST and GraphQL backends. Its resolver refuses
    names that resolve to a cloud metadata address (`resolve`: how names resolve, tests map them); it runs once
    per host and minute at most (the DNS cache), never per request. REST calls to `http://` backends take the
    lean client made beside it (`apimcp.http1`), under the same resolver and limit."""
    resolver = PolicyResolver(ANYTHING_BUT_METADATA, resolve)
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=60, resolver=resolver),
        cookie_jar=aiohttp.DummyCookieJar(),  # a gateway must not carry one user's cookies to another
    )
    lane.attach(session, Http1Client(resolver, limit))
    return session


class RestBackend(Backend):
    """Calls the operations of one REST service."""

    def __init__(
        self,
        service: Service,
        session: aiohttp.ClientSession,
        *,
        base_url: str | None = None,
        credentials: GivenCredentials = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        tls: TlsSettings | None = None,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        oauth_session: TokenClient | None = None,
        large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES,
    ) -> None:
        """`large_from_bytes`: JSON answers at least this large are given back unparsed (`UnparsedJson`)."""
        if base_url is None and all(described_base_url(service, op) is None for op in service.operations):
            raise ValueError(f"service {service.name!r} declares no servers: a backend URL is needed")
        self._service = service
        self._session = session
        self._base_url = base_url
        self._access = BackendAccess(credentials, oauth_session or session)
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_response_bytes
        self._max_redirects = max_redirects
        self._large_from_bytes = large_from_bytes
        # aiohttp's `ssl=True` is its default verification; a context carries a private CA or a client certificate.
        self._ssl: ssl.SSLContext | bool = client_context(tls) if tls is not None else True
        self._refusals: dict[str, str | None] = {}
        """Per base URL, why its host (when written as an address) is refused; the configured one is checked now."""
        if base_url is not None:
            self._refusal(base_url)

    def _refusal(self, base_url: str) -> str | None:
        try:
            return self._refusals[base_url]
        except KeyError:
            refused = self._refusals[base_url] = url_address_problem(base_url)
            return refused

    def base_url_for(self, operation: Operation) -> str:
        """The configured backend URL, else where the description says the operation is (`catalog.base_urls`)."""
        if self._base_url is not None:
            return self._base_url
        url = described_base_url(self._service, operation)
        if url is None:  # the plan's checks refuse this: no server for an operation it serves
            raise ValueError(f"the description declares no server for {operation.tool_name}: a backend URL is needed")
        return url

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        binding = operation.binding
        if not isinstance(binding, RestBinding):
            return Failure(f"{operation.tool_name} is not a REST operation", local=True)
        access = self._access.fixed
        if access is None:
            try:
                access = await self._access.current()
            except CredentialError as exc:
                return Failure(f"Could not obtain backend credentials: {exc}", local=True)
        if extras:
            access = self._access.with_extras(access, extras)
        if access.problem is not None:
            return Failure(f"The backend credentials cannot be sent: {access.problem}", local=True)
        base_url = self.base_url_for(operation)
        refused = self._refusal(base_url)
        if refused is not None:
            return Failure(f"The backend is refused: {refused}", unsent=True)
        try:
            request = build_request(binding, arguments, base_url, access.placement)
        except InvalidArgument as exc:
            return Failure(f"Invalid arguments: {exc}", local=True)
        except ValueError as exc:
            return _unsendable(operation, base_url, exc, access.mask)
        started = time.monotonic()
        try:
            url = yarl.URL(request.url, encoded=True)
            hop = await lane.first_hop(
                self._session, request.method, url, request.headers, request.body, public_url=request.public_url,
                client_timeout=self._timeout, timeout_seconds=self._timeout_seconds, tls=self._ssl,
                max_bytes=self._max_bytes,
            )  # fmt: skip
            if isinstance(hop, Failure):
                return hop
            if not isinstance(hop, Redirect):
                return self._answered(hop.status, hop.reason, hop.headers, hop.body, request.public_url, access)
            again = Outgoing(
                request.method,
                url,
                request.headers,
                # A multipart form is written once; a redirect that keeps the body needs it built again.
                body_again=lambda: build_request(binding, arguments, base_url, access.placement).body,
                query_credentials=access.placement.query,
            )
            return await follow(
                self._session,
                again,
                hop,
                functools.partial(self._answer, uri=request.public_url, access=access),
                started=started,
                client_timeout=self._timeout,
                tls=self._ssl,
                max_redirects=self._max_redirects,
                mask=access.mask,
            )
        except CALL_ERRORS as exc:
            return exception_failure(exc, request.public_url, self._timeout_seconds)
        except ValueError as exc:
            return _unsendable(operation, request.public_url, exc, access.mask)

    async def _answer(self, response: aiohttp.ClientResponse, uri: str, access: Access) -> BackendResult:
        unread = unread_coding(response)
        if unread is not None:
            return unread
        body = await read_limited(response, self._max_bytes)
        if body is None:
            return too_large(self._max_bytes)
        return self._answered(response.status, response.reason, response.headers, body, uri, access)

    def _answered(
        self, status: int, reason: str | None, headers: Mapping[str, str], body: bytes, uri: str, access: Access
    ) -> BackendResult:
        media_type = headers.get("Content-Type", "application/octet-stream")
        body = in_utf8(body, media_type)
        if access.mask:  # once, on the bytes: text, structured content and error excerpts all come from them
            body = access.mask.mask_bytes(body)
            reason = access.mask.mask_text(reason) if reason else reason
        if status >= 400:
            return status_failure(status, reason, body)
        return _body(body, media_type, status, uri, self._large_from_bytes)


_UTF8_NAMES: Final = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


def in_utf8(body: bytes, media_type: str) -> bytes:
    """A text or JSON answer in the charset its Content-Type names, written in UTF-8: every later step reads UTF-8
    (a Latin-1 answer became U+FFFD), the masking of secrets included (it knows their UTF-8 spellings only, so a
    UTF-16 echo passed it). Other answers, and a charset Python does not know, stay as they came."""
    charset = media_charset(media_type)
    if charset is None or charset in _UTF8_NAMES or not _read_as_text(media_type):
        return body
    try:
        return body.decode(charset, "replace").encode()
    except LookupError:
        return body


_BOM: Final = b"\xef\xbb\xbf"
_NDJSON: Final = "application/x-ndjson"
"""Lines of JSON: answered as text."""


def _read_as_text(media_type: str) -> bool:
    return media_kind(media_type) in ("json", "text") or media_type.split(";", 1)[0].strip().lower() == _NDJSON


def _unsendable(operation: Operation, url: str, exc: ValueError, mask: SecretMask) -> Failure:
    """A request aiohttp refuses to build or send (a value it will not put in a header...): a tool error like the
    ones `build_request` raises for what it knows, logged once without the values (they may be secrets)."""
    log.warning("%s: the request to %s could not be sent (%s)", operation.tool_name, origin(url), type(exc).__name__)
    return Failure(f"The request cannot be sent: {mask.mask_text(str(exc))}", local=True)


def _body(body: bytes, media_type: str, status: int, uri: str, large_from_bytes: int) -> BackendResult:
    if not body:
        return EmptyBody(status)
    kind = media_kind(media_type)
    base = media_type.split(";", 1)[0].strip().lower()
    if kind == "json":
        if body.startswith(_BOM):  # RFC 8259 lets a parser ignore it; orjson does not, and the answer became text
            body = body[len(_BOM) :]
        if len(body) >= large_from_bytes:
            return UnparsedJson(body, json_answer, status, base)
        return json_answer(body, status, base)
    if kind == "text" or base == _NDJSON:
        return TextBody(body.decode("utf-8", "replace"), base, status)
    return BinaryBody(body, base, uri, status)


def json_answer(body: bytes, status: int, media_type: str) -> JsonBody | TextBody | Failure:
    """A JSON answer's value and compact text; a body that does not parse is text, one too deep to write again a
    failure (a compact one is written only with the response, which tells the same)."""
    try:
        value = parse_json(body)
    except orjson.JSONDecodeError as exc:
        return TextBody(body.decode("utf-8", "replace"), media_type, status, unread_json(exc))
    # Compact text costs fewer tokens; a body without line breaks is most likely compact already.
    try:
        text = orjson.dumps(value).decode() if b"\n" in body else body.decode()
    except orjson.JSONEncodeError as exc:
        return unpassable(exc)
    return JsonBody(value, text, status)


async def close_session(session: aiohttp.ClientSession) -> None:
    fast = lane.detach(session)
    if fast is not None:
        await fast.close()
    await session.close()
    await asyncio.sleep(0)  # let the connector close its transports
