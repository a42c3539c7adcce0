"""Calling GraphQL operations: one POST of the document generated at import time, arguments as variables.

The tool arguments are never written into the query text, so a string argument
is data whatever it holds. An answer's `errors` make a Failure when there is no
`data`, and notes beside the data when there is (a partial answer). HTTP
failures, credential masking and redirects work as they do for REST backends.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import orjson
import yarl

from apimcp.backends import lane
from apimcp.backends.access import Access, BackendAccess, GivenCredentials
from apimcp.backends.base import (
    Backend,
    BackendResult,
    CallExtras,
    Failure,
    JsonBody,
    Progress,
    UnparsedJson,
    unpassable,
)
from apimcp.backends.http_common import (
    CALL_ERRORS,
    exception_failure,
    excerpt,
    read_limited,
    status_failure,
    too_large,
    unread_coding,
)
from apimcp.backends.oauth_client import CredentialError, TokenClient
from apimcp.backends.redirects import DEFAULT_MAX_REDIRECTS, Outgoing, Redirect, follow
from apimcp.backends.targets import url_address_problem
from apimcp.backends.tls import TlsSettings, client_context
from apimcp.catalog.model import GraphQLBinding, Operation, Service
from apimcp.safety.json_parsing import parse_json
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024
MAX_REPORTED_ERRORS = 10
ACCEPT = "application/graphql-response+json, application/json"


class GraphQLBackend(Backend):
    """Calls the operations of one GraphQL service at one endpoint."""

    def __init__(
        self,
        service: Service,
        session: aiohttp.ClientSession,
        *,
        endpoint: str | None = None,
        credentials: GivenCredentials = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        tls: TlsSettings | None = None,
        headers: Mapping[str, str] | None = None,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        oauth_session: TokenClient | None = None,
        large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES,
    ) -> None:
        """`large_from_bytes`: successful answers at least this large are given back unparsed (`UnparsedJson`);
        error statuses are read here, where a 401 can ask for the user's credentials again."""
        if endpoint is None:
            if not service.servers:
                raise ValueError(f"service {service.name!r} has no endpoint: a GraphQL endpoint URL is needed")
            endpoint = service.servers[0].resolve()
        self._service = service
        self._session = session
        self._endpoint = endpoint
        self._refused = url_address_problem(endpoint)
        """Why the endpoint's host, written as an address, is refused (a name is checked by the session's resolver)."""
        self._extra_headers = dict(headers or {})
        self._access = BackendAccess(credentials, oauth_session or session)
        fixed = self._access.fixed
        self._target: tuple[Access, yarl.URL, dict[str, str]] | None = (
            (fixed, *self._target_of(fixed)) if fixed is not None else None
        )
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._timeout_seconds = timeout_seconds
        self._max_bytes = max_response_bytes
        self._max_redirects = max_redirects
        self._large_from_bytes = large_from_bytes
        # aiohttp's `ssl=True` is its default verification; a context carries a private CA or a client certificate.
        self._ssl: ssl.SSLContext | bool = client_context(tls) if tls is not None else True

    def _target_of(self, access: Access) -> tuple[yarl.URL, dict[str, str]]:
        """The URL (with any query API key) and headers of every request made with `access`."""
        placement = access.placement
        url = yarl.URL(self._endpoint)
        if placement.query:
            url = url.extend_query(placement.query)
        headers = {**self._extra_headers, **placement.headers_with_cookies()}
        headers["Content-Type"] = "application/json"
        headers["Accept"] = ACCEPT
        return url, headers

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        binding = operation.binding
        if not isinstance(binding, GraphQLBinding):
            return Failure(f"{operation.tool_name} is not a GraphQL operation", local=True)
        if self._refused is not None:
            return Failure(f"The backend is refused: {self._refused}", unsent=True)
        target = self._target
        if target is None or self._access.fixed is None:
            try:
                access = await self._access.current()
            except CredentialError as exc:
                return Failure(f"Could not obtain backend credentials: {exc}", local=True)
            if target is None or target[0] is not access:  # a new access token
                target = self._target = (access, *self._target_of(access))
        access, url, headers = target
        if extras:
            access = self._access.with_extras(access, extras)
            url, headers = self._target_of(access)
        if access.problem is not None:
            return Failure(f"The backend credentials cannot be sent: {access.problem}", local=True)
        variables = {name: value for name, value in arguments.items() if name in binding.variables}
        payload = orjson.dumps(
            {"query": binding.document, "variables": variables, "operationName": binding.operation_name}
        )
        started = time.monotonic()
        try:
            hop = await lane.first_hop(
                self._session, "POST", url, headers, payload, public_url=self._endpoint, client_timeout=self._timeout,
                timeout_seconds=self._timeout_seconds, tls=self._ssl, max_bytes=self._max_bytes,
            )  # fmt: skip
            if isinstance(hop, Failure):
                return hop
            if not isinstance(hop, Redirect):
                return self._answered(hop.status, hop.reason, hop.body, access)
            return await follow(
                self._session,
                Outgoing("POST", url, headers, lambda: payload, access.placement.query),
                hop,
                functools.partial(self._answer, access=access),
                started=started,
                client_timeout=self._timeout,
                tls=self._ssl,
                max_redirects=self._max_redirects,
                mask=access.mask,
            )
        except CALL_ERRORS as exc:
            return exception_failure(exc, self._endpoint, self._timeout_seconds)

    async def _answer(self, response: aiohttp.ClientResponse, access: Access) -> BackendResult:
        unread = unread_coding(response)
        if unread is not None:
            return unread
        body = await read_limited(response, self._max_bytes)
        if body is None:
            return too_large(self._max_bytes)
        return self._answered(response.status, response.reason, body, access)

    def _answered(self, status: int, reason: str | None, body: bytes, access: Access) -> BackendResult:
        if access.mask:  # once, on the bytes: data, notes and error excerpts all come from them
            body = access.mask.mask_bytes(body)
            reason = access.mask.mask_text(reason) if reason else reason
        if status < 400 and len(body) >= self._large_from_bytes:
            return UnparsedJson(body, graphql_answer, status)
        return _result(status, reason, body)


def graphql_answer(body: bytes, status: int, media_type: str) -> JsonBody | Failure:
    """A successful answer's data (and its errors as notes), or the Failure its errors make."""
    return _result(status, None, body)


def _result(status: int, reason: str | None, body: bytes) -> JsonBody | Failure:
    answer = _graphql_answer(body)
    if answer is None:
        if status >= 400:
            return status_failure(status, reason, body)
        return Failure(f"The backend's answer is not a GraphQL response: {excerpt(body) or '(empty)'}", status)
    data = answer.get("data")
    errors = _error_messages(answer.get("errors"))
    if data is None:
        detail = errors or "the answer holds neither data nor errors"
        return Failure(f"GraphQL errors: {detail}", status if status >= 400 else None)
    notes = (f"GraphQL errors: {errors}",) if errors else ()
    try:
        text = orjson.dumps(data).decode()
    except orjson.JSONEncodeError as exc:
        return unpassable(exc)
    return JsonBody(value=data, text=text, status=status, notes=notes)


def _graphql_answer(body: bytes) -> dict[str, Any] | None:
    """The response object when `body` is a GraphQL response (JSON with `data` or `errors`)."""
    try:
        answer = parse_json(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(answer, dict) and ("data" in answer or "errors" in answer):
        return answer
    return None


def _error_messages(errors: Any) -> str:
    """`msg1 (at path a.0.b); msg2`: each error's message and where in the data it happened."""
    if not isinstance(errors, list) or not errors:
        return ""
    parts = []
    for error in errors[:MAX_REPORTED_ERRORS]:
        if not isinstance(error, dict):
            parts.append(str(error))
            continue
        message = str(error.get("message") or "unknown error")
        path = error.get("path")
        if isinstance(path, list) and path:
            message += f" (at path {'.'.join(str(p) for p in path)})"
        parts.append(message)
    if len(errors) > MAX_REPORTED_ERRORS:
        parts.append(f"and {len(errors) - MAX_REPORTED_ERRORS} more")
    return "; ".join(parts)
