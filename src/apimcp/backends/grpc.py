"""Calling gRPC methods through shared grpc.aio channels, without generated code.

Message classes come from the service's descriptor set, built once when the
backend is made; on the request path arguments become request bytes, bytes go
over the channel (no serializers on the channel: the payloads are bytes both
ways), and answers become JSON. Unary and client-streaming methods answer with
the response message; server-streaming and bidirectional ones with
`{"messages": [...]}`, collected up to a limit. A status other than OK becomes
a `Failure` naming the code, the message and the rich error details.
Credential values the server echoes (in answers or error details) are masked.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import grpc
import grpc.aio
import orjson

from apimcp.backends.access import Access, BackendAccess, GivenCredentials, as_list
from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, JsonBody, Progress
from apimcp.backends.credentials import ApiKey, Placement
from apimcp.backends.grpc_channels import ChannelKey, GrpcChannels, GrpcTls, parse_target
from apimcp.backends.grpc_json_size import fits
from apimcp.backends.grpc_messages import ArgumentError, Messages, Method
from apimcp.backends.oauth_client import CredentialError, TokenClient
from apimcp.backends.targets import api_key_problem
from apimcp.catalog.model import GrpcBinding, Operation, Service
from apimcp.safety.addresses import AddressRefused
from apimcp.safety.json_parsing import parse_json
from apimcp.safety.masking import SecretMask

__all__ = ["GrpcBackend", "GrpcChannels", "GrpcTls"]

log = logging.getLogger("apimcp.backends.grpc")

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_STREAM_MESSAGES = 1000
DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024

Metadata = tuple[tuple[str, str], ...]


class GrpcBackend(Backend):
    """Calls the methods of one gRPC service.

    `target` is `host:port` or `grpc://host:port` (plaintext), `grpcs://host:port` (TLS with the system roots,
    or `tls.ca_pem`), or None for the service's own server (a service imported by reflection has one). A
    configured `tls` makes any target TLS. Credentials travel as metadata: `authorization` for Bearer, Basic
    and OAuth client credentials (fetched with `oauth_session`), the lower-cased name for a header API key.
    """

    def __init__(
        self,
        service: Service,
        channels: GrpcChannels,
        *,
        target: str | None = None,
        tls: GrpcTls | None = None,
        credentials: GivenCredentials = None,
        oauth_session: TokenClient | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_stream_messages: int = DEFAULT_MAX_STREAM_MESSAGES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        messages: Messages | None = None,
    ) -> None:
        """`messages` may be shared by every backend of the same service (it is read-only once built)."""
        if target is None:
            if not service.servers:
                raise ValueError(f"service {service.name!r} declares no server: a gRPC target (host:port) is needed")
            target = service.servers[0].resolve()
        self._target = parse_target(target, tls)
        self._tls = tls
        self._channels = channels
        for given in as_list(credentials):
            if isinstance(given, ApiKey):
                problem = api_key_problem("grpc", given.name, given.location)
                if problem is not None:
                    raise ValueError(problem)
        self._access = BackendAccess(credentials, oauth_session, metadata_problem)
        fixed = self._access.fixed
        self._metadata: tuple[Access, Metadata] | None = (
            (fixed, _metadata(fixed.placement)) if fixed is not None else None
        )
        self._timeout = timeout_seconds
        self._max_messages = max_stream_messages
        self._max_bytes = max_response_bytes
        self._max_json_bytes = max(JSON_GROWTH * max_response_bytes, JSON_FLOOR)
        self.messages = messages or Messages(service)
        self._callables: dict[str, tuple[grpc.aio.Channel, Any]] = {}

    @property
    def channel_key(self) -> ChannelKey:
        """The shared channel this backend calls through."""
        return GrpcChannels.key(self._target, self._tls)

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        binding = operation.binding
        method = self.messages.methods.get(binding.path) if isinstance(binding, GrpcBinding) else None
        if method is None:
            return Failure(f"{operation.tool_name} is not a method of this gRPC service", local=True)
        try:
            requests = self.messages.requests(method, arguments)
        except ArgumentError as exc:
            return Failure(f"Invalid arguments: {exc}", local=True)
        cached = self._metadata
        if cached is None or self._access.fixed is None:
            try:
                access = await self._access.current()
            except CredentialError as exc:
                return Failure(f"Could not obtain backend credentials: {exc}", local=True)
            if cached is None or cached[0] is not access:  # a new access token
                cached = self._metadata = (access, _metadata(access.placement))
        access, metadata = cached
        if extras:
            access = self._access.with_extras(access, _as_metadata(extras))
            metadata = _metadata(access.placement)
        if access.problem is not None:
            return Failure(f"The backend credentials cannot be sent: {access.problem}", local=True)
        try:
            return await self._call(method, requests, metadata, progress, access.mask)
        except grpc.aio.AioRpcError as exc:
            transient = exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
            # UNAUTHENTICATED is HTTP's 401 (what makes a user's credential be asked for again, or renewed)
            status = 401 if exc.code() == grpc.StatusCode.UNAUTHENTICATED else None
            return Failure(access.mask.mask_text(self._explain(exc)), status, transient=transient,
                           unsent=self._unsent(exc))  # fmt: skip
        except ValueError as exc:  # an answer that is not the declared message, or has no JSON form
            return Failure(access.mask.mask_text(str(exc)))

    async def _call(
        self, method: Method, requests: list[bytes], metadata: Metadata, progress: Progress | None, mask: SecretMask
    ) -> BackendResult:
        made = await self._callable(method)
        if isinstance(made, Failure):
            return made
        request: Any = iter(requests) if method.client_streaming else requests[0]
        call = made(request, timeout=self._timeout, metadata=metadata)
        if method.server_streaming:
            return await self._collect(method, call, progress, mask)
        data: bytes = await call
        if len(data) > self._max_bytes:
            return Failure(f"The backend's response is larger than the {self._max_bytes} bytes allowed")
        if len(data) < OFF_THE_LOOP_FROM:
            return self._json_answer(method, data, mask)
        # a message's JSON may be twenty times its size (each packed enum a name): written in a thread, the event
        # loop answers others meanwhile
        return await asyncio.to_thread(self._json_answer, method, data, mask)

    def _json_answer(self, method: Method, data: bytes, mask: SecretMask) -> BackendResult:
        if not fits(method.response, data, self._max_json_bytes, self.messages.any_rate):
            return Failure(_json_too_large(self._max_json_bytes))  # refused before anything is built from it
        return _json_body(self.messages.response(method, data), mask, self._max_json_bytes)

    async def _collect(self, method: Method, call: Any, progress: Progress | None, mask: SecretMask) -> BackendResult:
        """Streamed answers gathered into `{"messages": [...]}`, stopping (and saying so) at the limits."""
        messages: list[Any] = []
        texts: list[bytes] = []
        """Each message's JSON, written as it came: the answer's text is made of them, not written again."""
        size = written = 0
        note: str | None = None
        try:
            async for data in call:
                size += len(data)
                if size > self._max_bytes:
                    note = (
                        f"The stream was stopped at {len(messages)} messages: the next one went past the "
                        f"{self._max_bytes} bytes allowed."
                    )
                    break
                value: Any = None
                if fits(method.response, data, self._max_json_bytes - written, self.messages.any_rate):
                    value = self.messages.response(method, data)  # else not built at all
                    texts.append(orjson.dumps(value))
                    written += len(texts[-1]) + 1
                if value is None or written > self._max_json_bytes:
                    note = (
                        f"The stream was stopped at {len(messages)} messages: with the next one, their JSON would "
                        f"go past the {self._max_json_bytes} bytes allowed."
                    )
                    break
                messages.append(value)
                if progress is not None:
                    await progress(float(len(messages)), None, f"{len(messages)} messages")
                if len(messages) >= self._max_messages:
                    note = f"The stream was stopped after {len(messages)} messages, the limit: more may have followed."
                    break
        except grpc.aio.AioRpcError as exc:
            # A stream cut by its deadline still delivered what it delivered; without any message, the backend
            # did not answer in time, which the caller reports as such.
            if exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED or not messages:
                raise
            note = (
                f"The stream was cut by its deadline ({self._timeout:g} s) after {len(messages)} messages: "
                "more may have followed."
            )
        finally:
            if not call.done():  # stopped at a limit, by a bad message, or the client gave up: end the RPC too
                call.cancel()
        text = b'{"messages":[' + b",".join(texts[: len(messages)]) + b"]}"  # as orjson writes the whole
        return _json_body({"messages": messages}, mask, self._max_json_bytes, (note,) if note else (), text)

    async def _callable(self, method: Method) -> Any:
        """The channel's multicallable for the method, made once per channel (bytes in, bytes out); a Failure when
        the channel cannot be opened (its target is refused, or does not resolve in time)."""
        channel = self._channels.opened(self._target, self._tls)
        if channel is None:
            try:
                channel = await asyncio.wait_for(self._channels.open(self._target, self._tls), self._timeout)
            except AddressRefused as exc:
                return Failure(f"The backend is refused: {exc}", unsent=True)
            except OSError:  # TimeoutError included
                return Failure(f"gRPC UNAVAILABLE: could not resolve the backend host ({self._target.address})")
        cached = self._callables.get(method.path)
        if cached is not None and cached[0] is channel:
            return cached[1]
        made: Any
        if method.client_streaming:
            made = channel.stream_stream(method.path) if method.server_streaming else channel.stream_unary(method.path)
        else:
            made = channel.unary_stream(method.path) if method.server_streaming else channel.unary_unary(method.path)
        self._callables[method.path] = (channel, made)
        return made

    def _unsent(self, error: grpc.aio.AioRpcError) -> bool:
        """Whether the call never reached a server (it may be made elsewhere even when it is not idempotent): the
        channel could not connect, as the library says it and as the channel's state shows. The details alone
        would not do: a server writes its own, and a method that ran may answer UNAVAILABLE "... connection
        refused" about its own database."""
        if error.code() != grpc.StatusCode.UNAVAILABLE:
            return False
        if not (error.details() or "").startswith("failed to connect to all addresses"):
            return False
        channel = self._channels.opened(self._target, self._tls)
        return channel is not None and channel.get_state() == grpc.ChannelConnectivity.TRANSIENT_FAILURE

    def _explain(self, error: grpc.aio.AioRpcError) -> str:
        code = error.code()
        details = error.details() or ""
        address = self._target.address
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"gRPC DEADLINE_EXCEEDED: the backend did not answer within {self._timeout:g} s ({address})"
        if code == grpc.StatusCode.UNAVAILABLE and "connection refused" in details.lower():
            return f"gRPC UNAVAILABLE: could not connect to the backend at {address}: connection refused"
        message = f"gRPC {code.name}: {details}" if details else f"gRPC {code.name}"
        extra = self.messages.status_details(error.trailing_metadata())
        if extra:
            message += " — details: " + orjson.dumps(extra).decode()
        return message


def _metadata(placement: Placement) -> Metadata:
    return tuple((name.lower(), value) for name, value in placement.headers.items())


_RESERVED = ("grpc-", ":")
_RESERVED_NAMES = frozenset({"te", "content-type", "user-agent", "accept", "host"})


_METADATA_NAME = re.compile(r"[0-9a-z_.-]+")
"""What a gRPC metadata key may hold (HTTP allows more in a header name: `x-a!b` reached grpc, which refused the
whole call)."""


def _as_metadata(extras: CallExtras) -> CallExtras:
    """Passed-on client headers gRPC can carry: printable ASCII values, names of the characters metadata keys take
    that are neither gRPC's own (`grpc-*`, `te`, `content-type`…) nor binary (`-bin`); the others are left out rather
    than failing the call."""
    headers = {
        name: value
        for name, value in extras.headers.items()
        if value.isascii() and value.isprintable() and _METADATA_NAME.fullmatch(name.lower())
        and not name.lower().endswith("-bin")
        and not name.lower().startswith(_RESERVED) and name.lower() not in _RESERVED_NAMES
    }  # fmt: skip
    return replace(extras, headers=headers) if len(headers) != len(extras.headers) else extras


def metadata_problem(placement: Placement) -> str | None:
    """Why a placement cannot travel as gRPC metadata, or None: ASCII metadata values are printable ASCII."""
    for name, value in placement.headers.items():
        if not value.isascii() or not value.isprintable():
            return f"the value of the {name.lower()} metadata holds characters gRPC metadata cannot carry (it is ASCII)"
    return None


OFF_THE_LOOP_FROM = 64 * 1024
"""Bytes of a message from which its JSON is written in a worker thread."""
JSON_GROWTH = 8
"""How many times `max_response_bytes` an answer's JSON may weigh (protobuf is compact: a packed enum is a byte,
its JSON name a dozen), and at least `JSON_FLOOR` bytes (a small message prints every field, defaults too):
past it, a Failure, not tens of MB of text for the client."""
JSON_FLOOR = 1024 * 1024


def _json_too_large(max_bytes: int) -> str:
    return f"The backend's answer, written as JSON, is larger than the {max_bytes} bytes allowed"


def _json_body(
    value: Any, mask: SecretMask, max_bytes: int, notes: tuple[str, ...] = (), text: bytes | None = None
) -> JsonBody | Failure:
    """An answer as JSON (a Failure past `max_bytes` of it), its text `text` when already written; protobuf bytes
    cannot be masked in place, so the JSON text is, and read again."""
    text = orjson.dumps(value) if text is None else text
    if len(text) > max_bytes:
        return Failure(_json_too_large(max_bytes))
    if mask:  # bytes fields are base64 in JSON: a credential echoed into one is searched for as base64 too
        masked = mask.in_base64().mask_bytes(text)
        if masked is not text:
            text, value = masked, parse_json(masked)
    return JsonBody(value, text.decode(), notes=notes)
