"""Calling REST operations over one shared aiohttp session.

Failures never escape as exceptions: an error status, a timeout, a refused
connection or an unresolvable host becomes a `Failure` that names the cause
(and never the credentials). Responses are read up to a size limit.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.backends.base import (
    Backend,
    BackendResult,
    BinaryBody,
    EmptyBody,
    Failure,
    JsonBody,
    Progress,
    TextBody,
)
from apimcp.backends.credentials import Credentials, place
from apimcp.backends.oauth_client import ClientCredentials, ClientCredentialsTokens, CredentialError
from apimcp.backends.rest_request import InvalidArgument, PreparedRequest, build_request
from apimcp.catalog.media import media_kind
from apimcp.catalog.model import Operation, RestBinding, Service

log = logging.getLogger("apimcp.backends.rest")

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
ERROR_BODY_CHARS = 2000


def new_session(limit: int = 256) -> aiohttp.ClientSession:
    """The one client session a gateway shares between all its REST backends."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, limit_per_host=limit, ttl_dns_cache=60),
        cookie_jar=aiohttp.DummyCookieJar(),  # a gateway must not carry one user's cookies to another
    )


class RestBackend(Backend):
    """Calls the operations of one REST service."""

    def __init__(
        self,
        service: Service,
        session: aiohttp.ClientSession,
        *,
        base_url: str | None = None,
        credentials: Credentials | ClientCredentials | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if base_url is None and not service.servers:
            raise ValueError(f"service {service.name!r} declares no servers: a backend URL is needed")
        self._service = service
        self._session = session
        self._base_url = base_url
        if isinstance(credentials, ClientCredentials):
            self._tokens: ClientCredentialsTokens | None = ClientCredentialsTokens(session, credentials)
            self._placement = place(None)
        else:
            self._tokens = None
            self._placement = place(credentials)
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_response_bytes

    def base_url_for(self, operation: Operation) -> str:
        """The configured backend URL, else the operation's own servers, else the service's."""
        if self._base_url is not None:
            return self._base_url
        own = operation.binding.servers if isinstance(operation.binding, RestBinding) else ()
        servers = own or self._service.servers
        url = servers[0].resolve()
        if url.startswith("/") and self._service.servers and servers is own:
            return self._service.servers[0].resolve().rstrip("/") + url
        return url

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None
    ) -> BackendResult:
        binding = operation.binding
        if not isinstance(binding, RestBinding):
            return Failure(f"{operation.tool_name} is not a REST operation")
        placement = self._placement
        if self._tokens is not None:
            try:
                placement = await self._tokens.placement()
            except CredentialError as exc:
                return Failure(f"Could not obtain backend credentials: {exc}")
        try:
            request = build_request(binding, arguments, self.base_url_for(operation), placement)
        except InvalidArgument as exc:
            return Failure(f"Invalid arguments: {exc}")
        try:
            return await self._send(request)
        except TimeoutError:
            return Failure(f"The backend did not answer within {self._timeout_seconds:g} s ({_origin(request)})")
        except aiohttp.ClientConnectorDNSError:
            return Failure(f"Could not resolve the backend host {yarl.URL(request.public_url).host!r}")
        except aiohttp.ClientConnectorError as exc:
            errno = exc.os_error.errno
            reason = os.strerror(errno) if errno else type(exc.os_error).__name__
            return Failure(f"Could not connect to the backend at {_origin(request)}: {reason.lower()}")
        except aiohttp.InvalidURL:
            return Failure(f"The backend URL is not valid: {request.public_url}")
        except aiohttp.ClientError as exc:
            log.warning("backend call to %s failed: %s", _origin(request), type(exc).__name__)
            return Failure(f"The backend call failed: {type(exc).__name__} ({_origin(request)})")

    async def _send(self, request: PreparedRequest) -> BackendResult:
        async with self._session.request(
            request.method,
            yarl.URL(request.url, encoded=True),
            headers=request.headers,
            data=request.body,
            timeout=self._timeout,
        ) as response:
            body = await self._read(response)
            if body is None:
                return Failure(f"The backend's response is larger than the {self._max_bytes} bytes allowed")
            status = response.status
            media_type = response.headers.get("Content-Type", "application/octet-stream")
            if status >= 400:
                text = body.decode("utf-8", "replace")
                excerpt = text[:ERROR_BODY_CHARS] + ("…" if len(text) > ERROR_BODY_CHARS else "")
                reason = response.reason or ""
                return Failure(f"HTTP {status} {reason}".strip() + (f": {excerpt}" if excerpt else ""), status)
            return _body(body, media_type, status, request.public_url)

    async def _read(self, response: aiohttp.ClientResponse) -> bytes | None:
        """The whole body, or None as soon as it exceeds the size limit."""
        length = response.content_length
        if length is not None:
            return await response.read() if length <= self._max_bytes else None
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > self._max_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)


def _body(body: bytes, media_type: str, status: int, uri: str) -> BackendResult:
    if not body:
        return EmptyBody(status)
    kind = media_kind(media_type)
    base = media_type.split(";", 1)[0].strip().lower()
    if kind == "json":
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return TextBody(body.decode("utf-8", "replace"), base, status)
        # Compact text costs fewer tokens; a body without line breaks is most likely compact already.
        text = orjson.dumps(value).decode() if b"\n" in body else body.decode()
        return JsonBody(value, text, status)
    if kind == "text" or base == "application/x-ndjson":
        return TextBody(body.decode("utf-8", "replace"), base, status)
    return BinaryBody(body, base, uri, status)


def _origin(request: PreparedRequest) -> str:
    url = yarl.URL(request.public_url, encoded=True)
    return f"{url.host}:{url.port}" if url.port else str(url.host)


async def close_session(session: aiohttp.ClientSession) -> None:
    await session.close()
    await asyncio.sleep(0)  # let the connector close its transports
