"""A gRPC answer's JSON size is estimated from its wire bytes, never below what it prints as, and an answer whose
JSON would outgrow its bound is refused before it is parsed."""

from __future__ import annotations

import random
import time
from typing import Any

import grpc
import grpc.aio
import orjson
import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from apimcp.backends.base import Failure, JsonBody
from apimcp.backends.grpc import GrpcBackend, GrpcChannels
from apimcp.backends.grpc_json_size import fits, json_size
from apimcp.backends.grpc_messages import Messages
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.masking import NO_MASK
from tests.support.grpc_server import PROTOS, SHOP_PROTO, answering

SHOP = import_protobuf(str(PROTOS / SHOP_PROTO), include_paths=[str(PROTOS)])
MESSAGES = Messages(SHOP)
CLASSES = {
    name: message_factory.GetMessageClass(MESSAGES.pool.FindMessageTypeByName(name))
    for name in ("shop.v1.Item", "shop.v1.Caller", "shop.v1.Total")
}
NO_BOUND = 1 << 62

_INTS = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1), FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1), FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1), FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1), FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}  # fmt: skip


def _scalar(field: Any, rng: random.Random) -> Any:  # a FieldDescriptor, upb's or the Python one
    kind = field.type
    if kind in _INTS:
        low, high = _INTS[kind]
        return rng.choice((0, 1, low, high, rng.randint(low, high)))
    if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return rng.choice((0.0, -1.5e-300 if kind == FieldDescriptor.TYPE_DOUBLE else -1.5e-30, 3.4e38, rng.random()))
    if kind == FieldDescriptor.TYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        return rng.choice(field.enum_type.values).number
    text = "".join(rng.choice('a\x00\x1f"\\é€😀\u2028<') for _ in range(rng.randint(0, 12)))
    return text.encode() if kind == FieldDescriptor.TYPE_BYTES else text


def _fill(message: Message, rng: random.Random, depth: int) -> None:
    descriptor = message.DESCRIPTOR
    if descriptor.full_name == "google.protobuf.Any":
        if depth < 3:
            inner = CLASSES["shop.v1.Item"]()
            _fill(inner, rng, depth + 1)
            message.Pack(inner)  # type: ignore[attr-defined]
        return
    if descriptor.full_name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        message.seconds, message.nanos = rng.randint(0, 10**9), rng.randint(0, 999_999_999)  # type: ignore[attr-defined]
        return
    if descriptor.full_name == "google.protobuf.FieldMask":
        message.paths.extend(rng.choice(("a", "b_c", "d.e_f")) for _ in range(rng.randint(0, 3)))  # type: ignore[attr-defined]
        return
    if descriptor.full_name == "google.protobuf.Value":
        message.string_value = "v" * rng.randint(0, 5)  # type: ignore[attr-defined]
        return
    for field in descriptor.fields:
        if descriptor.full_name.startswith("google.protobuf.") and descriptor.full_name.endswith("Value"):
            pass  # wrappers: their one field, filled like any
        elif rng.random() < 0.4:
            continue
        value = getattr(message, field.name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            key_field, value_field = entry.fields_by_name["key"], entry.fields_by_name["value"]
            for _ in range(rng.randint(0, 3)):
                key = _scalar(key_field, rng)
                if value_field.message_type is not None:
                    _fill(value[key], rng, depth + 1)
                else:
                    value[key] = _scalar(value_field, rng)
        elif field.is_repeated:
            for _ in range(rng.randint(0, 4)):
                if entry is not None:
                    if depth < 3:
                        _fill(value.add(), rng, depth + 1)
                else:
                    value.append(_scalar(field, rng))
        elif entry is not None:
            if depth < 3:
                _fill(value, rng, depth + 1)
                if not value.ListFields():
                    value.SetInParent()
        else:
            setattr(message, field.name, _scalar(field, rng))


def _printed(message: Message) -> int:
    return len(orjson.dumps(json_format.MessageToDict(message, always_print_fields_with_no_presence=True,
                                                      descriptor_pool=MESSAGES.pool)))  # fmt: skip


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_estimate_is_never_below_the_json_a_message_prints_as(name: str) -> None:
    rng = random.Random(f"json size {name}")
    for _ in range(300):
        message = CLASSES[name]()
        _fill(message, rng, 0)
        data = message.SerializeToString()
        printed = _printed(message)
        estimate = json_size(type(message), data, NO_BOUND)
        assert estimate >= printed, message
        assert fits(type(message), data, estimate, MESSAGES.any_rate)
        assert not fits(
            type(message), data, printed - 1, MESSAGES.any_rate
        )  # neither the walk nor the worst rate says less


def test_an_empty_message_s_defaults_are_counted() -> None:
    item = CLASSES["shop.v1.Item"]
    assert json_size(item, b"", NO_BOUND) >= _printed(item()) > 150


def test_empty_elements_of_a_rich_message_are_refused_from_their_bytes_quickly() -> None:
    """The finding: a repeated message of empty elements costs two bytes each on the wire and every field of it as
    JSON (and in memory, parsed). 400 kB of `price_by_day` entries with an empty `Money` each would print about ten
    times their size (with keys of their own; these all say 0)."""
    entry = b"\xc2\x01\x02\x12\x00"  # field 24 (a map entry), its value an empty Money
    data = entry * 80_000
    started = time.perf_counter()
    assert not fits(CLASSES["shop.v1.Item"], data, 3_200_000, MESSAGES.any_rate)
    assert time.perf_counter() - started < 5  # timing-ok: stops at the bound, long before the 80,000 entries
    assert json_size(CLASSES["shop.v1.Item"], data[: len(entry) * 100], NO_BOUND) >= _printed(
        CLASSES["shop.v1.Item"].FromString(data[: len(entry) * 100])
    )


def test_the_backend_refuses_such_an_answer_without_parsing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []
    monkeypatch.setattr(Messages, "response", lambda self, method, data: parsed.append(data))
    backend = GrpcBackend(SHOP, GrpcChannels(), target="127.0.0.1:1", max_response_bytes=400_000)
    (method,) = (method for method in backend.messages.methods.values() if method.path.endswith("/GetItem"))
    answer = backend._json_answer(method, b"\xc2\x01\x02\x12\x00" * 80_000, NO_MASK)
    assert isinstance(answer, Failure) and not parsed
    assert answer.message == "The backend's answer, written as JSON, is larger than the 3200000 bytes allowed"


@pytest.mark.anyio
async def test_a_stream_stops_before_building_a_message_whose_json_would_pass_the_bound() -> None:
    hostile = b"\xc2\x01\x02\x12\x00" * 70_000  # 350 kB, a map entry with an empty Money each: ten times that as JSON
    item: Any = CLASSES["shop.v1.Item"]()
    item.id = "1"
    small = item.SerializeToString()

    async def stream(request: bytes, context: Any) -> Any:
        for data in (small, small, hostile, small):
            yield data

    operation = SHOP.operation("ListItems")
    assert operation is not None
    channels = GrpcChannels()
    async with answering(grpc.unary_stream_rpc_method_handler(stream)) as target:
        try:
            result = await GrpcBackend(SHOP, channels, target=target, max_response_bytes=400_000).call(operation, {})
        finally:
            await channels.close()
    assert isinstance(result, JsonBody) and [item["id"] for item in result.value["messages"]] == ["1", "1"]
    assert result.text == orjson.dumps(result.value).decode()  # made of the messages' own texts, the same
    assert result.notes == (
        "The stream was stopped at 2 messages: with the next one, their JSON would go past the 3200000 bytes allowed.",
    )
