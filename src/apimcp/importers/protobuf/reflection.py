"""Descriptors of a live server, by gRPC server reflection (v1, else v1alpha).

The reflection protocol is the same in both versions, only the method path
differs, so the v1alpha messages bundled with grpcio-reflection serve for both.
Files come back with some of their imports; missing imports are asked for by
name until the set is complete. Reflection carries no source comments, so tools
imported this way have no descriptions from comments.

Reflection is a fetch made on someone's behalf: the host is resolved once, every
address is checked against the fetch policy, and the channel connects to the checked
addresses (`ipv4:`/`ipv6:` targets) while TLS and the `:authority` keep the name. Like a fetch it
has a size cap (`FetchLimits.max_bytes`, for all its answers together) and answers are read one
message at a time: a server that sends more (or more messages than it was asked for) is cut off.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import grpc
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError
from grpc_reflection.v1alpha import reflection_pb2 as pb

from apimcp.importers.errors import SpecError
from apimcp.safety.addresses import AddressRefused, IPAddress
from apimcp.safety.fetch import BadUrl, Fetcher, split_url
from apimcp.safety.masking import SecretMask

_PATHS = (
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
)
_INTERNAL = ("grpc.reflection.",)
_MAX_ROUNDS = 64
_MAX_MESSAGE_BYTES = 2**31 - 1
"""The largest value gRPC's `grpc.max_receive_message_length` takes (a C int)."""
_DEFAULT_PORT = 443  # gRPC's, when a URL names none


def is_reflection_url(source: str) -> bool:
    # the scheme only: the rest of a malformed URL is reflect()'s to refuse
    return source.partition("://")[0].lower() in ("grpc", "grpcs")


def internal_service(full_name: str) -> bool:
    """The reflection service, which every reflecting server offers beside its API, never imported as tools
    (the health service is: the importer imports it when it is named)."""
    return full_name.startswith(_INTERNAL)


def reflect(
    url: str, timeout_seconds: float, metadata: Sequence[tuple[str, str]] = (), fetcher: Fetcher | None = None
) -> tuple[descriptor_pb2.FileDescriptorSet, list[str]]:
    """The descriptors of every service `url` (grpc://host:port or grpcs://host:port) offers, with their imports,
    and the full names of those services; `metadata` (credentials) goes with every reflection call. The host
    must be one `fetcher`'s policy allows (default: public addresses only)."""
    try:
        parts = split_url(url)
    except BadUrl as exc:
        raise SpecError(str(exc), source=url) from None
    host, port = parts.hostname, parts.port or _DEFAULT_PORT
    if not parts.netloc or not host:
        raise SpecError("a reflection URL looks like grpc://host:port or grpcs://host:port", source=url)
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    fetcher = fetcher or Fetcher()
    deadline = time.monotonic() + timeout_seconds  # for the lookup and every call: one deadline
    try:
        addresses = fetcher.checked_addresses(host, port, deadline)
    except AddressRefused as exc:
        raise SpecError(f"refused to reflect it: {exc}", source=url) from None
    except OSError:
        raise SpecError(_unreachable(authority, timeout_seconds), source=url) from None
    max_bytes = fetcher.limits.max_bytes
    options: list[tuple[str, str | int]] = [
        ("grpc.default_authority", authority),
        ("grpc.enable_http_proxy", 0),
        ("grpc.max_receive_message_length", min(max_bytes, _MAX_MESSAGE_BYTES)),
    ]
    target = _target(addresses, port)
    if parts.scheme == "grpcs":
        options.append(("grpc.ssl_target_name_override", host))
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(), options=options)
    else:
        channel = grpc.insecure_channel(target, options=options)
    with channel:
        for path in _PATHS:
            try:
                return _Session(channel, path, deadline, url, tuple(metadata), max_bytes).run()
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
                if code == grpc.StatusCode.UNIMPLEMENTED and path != _PATHS[-1]:
                    continue
                message = _explain(code, exc, authority, timeout_seconds, max_bytes)
                # A server may echo what it was sent; the mask leaves values too short to be secrets alone.
                raise SpecError(SecretMask(value for _, value in metadata).mask_text(message), source=url) from exc
    raise AssertionError("unreachable")


def _target(addresses: Sequence[IPAddress], port: int) -> str:
    """A gRPC target naming the checked addresses themselves (those of the first one's family), so that the
    channel never resolves the name again."""
    first = addresses[0]
    same = [a for a in addresses if a.version == first.version]
    if first.version == 4:
        return "ipv4:" + ",".join(f"{a}:{port}" for a in same)
    return "ipv6:" + ",".join(f"[{a}]:{port}" for a in same)


def _unreachable(authority: str, timeout: float) -> str:
    # One text for refused, reset, unresolvable and silent: anything more would tell open ports from closed ones.
    return (
        f"no answer from a gRPC server at {authority} within {timeout:g} s (the name does not resolve, the "
        "connection failed, or the answer was too slow)"
    )


def _explain(code: grpc.StatusCode, exc: grpc.RpcError, address: str, timeout: float, max_bytes: int) -> str:
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return "the server does not offer server reflection (grpc.reflection.v1 or v1alpha)"
    if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE):
        return _unreachable(address, timeout)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # the usual cause: one message past the channel's limit
        return f"server reflection failed: gRPC {code.name}: {details} (answers may hold {max_bytes} bytes)"
    return f"server reflection failed: gRPC {code.name}: {details}"


def _raw(data: bytes) -> bytes:
    return data


class _Session:
    def __init__(
        self,
        channel: grpc.Channel,
        path: str,
        deadline: float,
        url: str,
        metadata: tuple[tuple[str, str], ...],
        max_bytes: int,
    ) -> None:
        self._metadata = metadata
        self._url = url
        # Raw answers: their size is counted before anything is parsed.
        self._call = channel.stream_stream(
            path, request_serializer=pb.ServerReflectionRequest.SerializeToString, response_deserializer=_raw
        )
        self._deadline = deadline
        self._max_bytes = max_bytes
        self._received = 0
        """Bytes of every answer of the session so far, held against `max_bytes`."""
        self.files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def _ask(self, requests: list[pb.ServerReflectionRequest]) -> list[pb.ServerReflectionResponse]:
        """One answer per request, read one at a time: the call is cancelled as soon as the server sends more
        messages than it was asked for or more bytes than the session may receive."""
        timeout = max(0.001, self._deadline - time.monotonic())
        call = self._call(iter(requests), timeout=timeout, metadata=self._metadata)
        answers: list[pb.ServerReflectionResponse] = []
        for data in call:
            self._received += len(data)
            problem = None
            if len(answers) == len(requests):
                problem = f"sent more answers than the {len(requests)} questions it was asked"
            elif self._received > self._max_bytes:
                problem = f"sent more than the {self._max_bytes} bytes allowed"
            if problem is not None:
                call.cancel()
                raise SpecError(f"server reflection {problem}", source=self._url)
            try:
                answers.append(pb.ServerReflectionResponse.FromString(data))
            except DecodeError as exc:
                call.cancel()
                raise SpecError(f"server reflection sent an answer that does not parse: {exc}",
                                source=self._url) from exc  # fmt: skip
        if len(answers) != len(requests):
            raise SpecError(f"server reflection sent {len(answers)} answers to the {len(requests)} questions it was "
                            "asked", source=self._url)  # fmt: skip
        return answers

    def run(self) -> tuple[descriptor_pb2.FileDescriptorSet, list[str]]:
        (listing,) = self._ask([pb.ServerReflectionRequest(list_services="")])
        self._check(listing)
        services = [s.name for s in listing.list_services_response.service if not internal_service(s.name)]
        if services:
            self._absorb(self._ask([pb.ServerReflectionRequest(file_containing_symbol=s) for s in services]))
        for _ in range(_MAX_ROUNDS):
            missing = sorted({d for f in self.files.values() for d in f.dependency} - set(self.files))
            if not missing:
                break
            self._absorb(self._ask([pb.ServerReflectionRequest(file_by_filename=name) for name in missing]))
        result = descriptor_pb2.FileDescriptorSet()
        result.file.extend(self.files.values())
        return result, services

    def _absorb(self, responses: list[pb.ServerReflectionResponse]) -> None:
        for response in responses:
            self._check(response)
            for raw in response.file_descriptor_response.file_descriptor_proto:
                try:
                    file = descriptor_pb2.FileDescriptorProto.FromString(raw)
                except DecodeError as exc:
                    raise SpecError(f"server reflection sent a file descriptor that does not parse: {exc}",
                                    source=self._url) from exc  # fmt: skip
                self.files.setdefault(file.name, file)

    def _check(self, response: pb.ServerReflectionResponse) -> None:
        if response.HasField("error_response"):
            error = response.error_response
            asked = response.original_request
            what = asked.file_containing_symbol or asked.file_by_filename or "the service list"
            name = grpc.StatusCode.UNKNOWN.name
            for code in grpc.StatusCode:
                if code.value[0] == error.error_code:
                    name = code.name
            raise SpecError(f"server reflection could not give {what}: {name}: {error.error_message}", source=self._url)
