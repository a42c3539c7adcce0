"""Message classes of a gRPC service, built once from its descriptor set, and JSON both ways.

JSON follows the proto3 mapping. Responses print every field without presence,
zeros and empty lists included, so an agent can tell "0" from "not sent"; field
names are json names (lowerCamel), as in the tool schemas.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2

from apimcp.backends.grpc_json_size import any_rate
from apimcp.catalog.model import GrpcBinding, Service

STATUS_DETAILS_KEY = "grpc-status-details-bin"
_MAX_CHECKED_DEPTH = 64
_ = error_details_pb2  # registers google.rpc.BadRequest, ErrorInfo... in the default pool, to decode error details


class ArgumentError(Exception):
    """Tool arguments that do not make a request message."""


@dataclass(frozen=True, slots=True)
class Method:
    path: str
    request: type[Message]
    response: type[Message]
    client_streaming: bool
    server_streaming: bool
    holds_bytes: bool = False
    """Whether a request message may carry a `bytes` field (its arguments are checked for base64 then)."""


class Messages:
    """The service's types in a private pool (never the process-wide default one, where names may clash)."""

    def __init__(self, service: Service) -> None:
        if not service.descriptors:
            raise ValueError(f"service {service.name!r} has no protobuf descriptors: import it again")
        files = descriptor_pb2.FileDescriptorSet.FromString(service.descriptors)
        self.pool = descriptor_pool.DescriptorPool()
        for file in files.file:  # importers write imports first
            self.pool.Add(file)
        self.any_rate = any_rate(self.pool.FindMessageTypeByName(name) for name in _message_names(files))
        """How much an `Any` in an answer may print per byte, packing any of these types (`grpc_json_size`)."""
        self.methods: dict[str, Method] = {}
        for operation in service.operations:
            binding = operation.binding
            if isinstance(binding, GrpcBinding):
                request = self._class(binding.input_type)
                self.methods[binding.path] = Method(
                    binding.path,
                    request,
                    self._class(binding.output_type),
                    binding.client_streaming,
                    binding.server_streaming,
                    _holds_bytes(request.DESCRIPTOR, set()),
                )

    def _class(self, name: str) -> type[Message]:
        try:
            return message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
        except KeyError as exc:
            raise ValueError(f"the service's descriptors lack the message type {name}") from exc

    def requests(self, method: Method, arguments: Mapping[str, Any]) -> list[bytes]:
        """Serialized request messages: one, or for client streaming the list in `messages`."""
        if not method.client_streaming:
            return [self._request(method, arguments, "")]
        items = arguments.get("messages")
        if not isinstance(items, list):
            raise ArgumentError("'messages' must be a list of request messages")
        return [self._request(method, item, f"messages[{i}]: ") for i, item in enumerate(items)]

    def _request(self, method: Method, value: Any, where: str) -> bytes:
        if not isinstance(value, Mapping):
            raise ArgumentError(f"{where}a request message must be a JSON object")
        if method.holds_bytes:  # known when the service was loaded: most requests hold none
            _check_bytes(value, method.request.DESCRIPTOR, where, 0)
        try:
            message = json_format.ParseDict(dict(value), method.request(), descriptor_pool=self.pool)
        except (json_format.ParseError, AttributeError, TypeError, ValueError) as exc:  # a nested Any's "@type" of
            raise ArgumentError(f"{where}{exc}") from exc  # another type reaches protobuf's own code unchecked
        return message.SerializeToString()

    def response(self, method: Method, data: bytes) -> Any:
        """The JSON form of one serialized response message."""
        try:
            message = method.response.FromString(data)
        except DecodeError as exc:
            raise ValueError(f"the backend's answer is not a valid {method.response.DESCRIPTOR.full_name}") from exc
        return self.to_json(message)

    def to_json(self, message: Message) -> Any:
        try:
            return json_format.MessageToDict(
                message, always_print_fields_with_no_presence=True, descriptor_pool=self.pool
            )
        except (TypeError, ValueError, json_format.Error, DecodeError) as exc:  # an Any of a type no descriptor
            # describes, or whose packed bytes are not that type's
            raise ValueError(f"the backend's answer cannot be shown as JSON: {exc}") from exc

    def status_details(self, trailing: Iterable[tuple[str, Any]] | None) -> list[Any]:
        """The rich error details of a failed call (google.rpc.Status in `grpc-status-details-bin`), as JSON:
        known detail types decoded, others named by their type URL."""
        raw = next((value for key, value in trailing or () if key == STATUS_DETAILS_KEY), None)
        if not isinstance(raw, bytes):
            return []
        try:
            status = status_pb2.Status.FromString(raw)
        except DecodeError:
            return []
        return [self._detail(detail.type_url, detail.value) for detail in status.details]

    def _detail(self, type_url: str, value: bytes) -> Any:
        name = type_url.rsplit("/", 1)[-1]
        for pool in (self.pool, descriptor_pool.Default()):
            try:
                descriptor = pool.FindMessageTypeByName(name)
            except KeyError:
                continue
            try:
                message = message_factory.GetMessageClass(descriptor).FromString(value)
                decoded = json_format.MessageToDict(message, descriptor_pool=pool)
            except (DecodeError, TypeError, ValueError, json_format.Error):
                break
            return (
                {"@type": type_url, **decoded} if isinstance(decoded, dict) else {"@type": type_url, "value": decoded}
            )
        return {"@type": type_url}


def _message_names(files: descriptor_pb2.FileDescriptorSet) -> Iterator[str]:
    """The full name of every message type `files` declare, nested ones included."""
    pending = [
        (f"{file.package}." if file.package else "", message) for file in files.file for message in file.message_type
    ]
    while pending:
        prefix, message = pending.pop()
        name = prefix + message.name
        yield name
        pending.extend((f"{name}.", nested) for nested in message.nested_type)


_B64 = re.compile(r"[A-Za-z0-9+/\-_]*={0,2}")
_WRAPPERS = frozenset({"google.protobuf.Any", "google.protobuf.Struct", "google.protobuf.Value",
                       "google.protobuf.ListValue"})  # fmt: skip
"""Message types whose JSON form is not their fields (what they hold is checked by protobuf, or holds no bytes)."""


def _holds_bytes(descriptor: Any, seen: set[str]) -> bool:
    """Whether a message of `descriptor`, or one it nests (maps and repeated fields included), has a `bytes` field
    whose JSON `_check_bytes` reads."""
    if descriptor.full_name in seen or descriptor.full_name in _WRAPPERS:
        return False
    seen.add(descriptor.full_name)
    return any(
        field.type == field.TYPE_BYTES or (field.message_type is not None and _holds_bytes(field.message_type, seen))
        for field in descriptor.fields
    )


def _check_bytes(value: Mapping[str, Any], descriptor: Any, where: str, depth: int) -> None:
    """Refuse a `bytes` field of `value` (a message of `descriptor`, as JSON) that is not base64: protobuf's reader
    drops the characters it does not know, so `hello world!` was sent as other bytes, and the call succeeded."""
    if depth > _MAX_CHECKED_DEPTH or descriptor.full_name in _WRAPPERS:
        return
    for key, item in value.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None or item is None:
            continue  # protobuf names what it does not know
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name["value"]
            items = list(item.values()) if isinstance(item, Mapping) else []
            _check_values(items, entry, f"{where}{key}", depth)
        else:
            _check_values(item if isinstance(item, list) else [item], field, f"{where}{key}", depth)


def _check_values(items: list[Any], field: FieldDescriptor, where: str, depth: int) -> None:
    for item in items:
        if field.type == field.TYPE_BYTES and isinstance(item, str) and not _is_base64(item):
            raise ArgumentError(f"{where}: a bytes field takes base64 (standard or URL-safe)")
        if field.message_type is not None and isinstance(item, Mapping):
            _check_bytes(item, field.message_type, f"{where}.", depth + 1)


def _is_base64(text: str) -> bool:
    compact = text.rstrip("=")
    if _B64.fullmatch(text) is None or len(compact) % 4 == 1:
        return False
    try:
        base64.b64decode(compact.replace("-", "+").replace("_", "/") + "=" * (-len(compact) % 4), validate=True)
    except ValueError:  # binascii.Error
        return False
    return True
