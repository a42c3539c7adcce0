"""How large a gRPC answer's JSON would be, read off its wire bytes before anything is built from them.

Protobuf is compact where JSON is not: an empty element of a repeated message costs two bytes on the wire, yet
parsing makes a message with room for every field, and the JSON prints every field without presence at its
default. So an answer well within `max_response_bytes` could cost gigabytes before the JSON's own bound was
checked (measured: 200 kB of empty elements of a 50-field message made an 800 MB dict; 10 MB of them took 2 GB
to parse). The answer's JSON size is therefore estimated from its bytes first, and one past the bound is refused
before it is parsed.

The estimate charges each message occurrence its braces and the fields that print when absent, at their
defaults; each field it holds that prints only when present, its name; each string or bytes value the most it
prints as (escapes at their longest, base64); each varint six bytes a byte (a one-byte int64 prints as `"127",`),
or a packed enum's longest name; a fixed-size number the most its size prints as; a sub-message, that message.
When even the answer's whole length at the worst rate of any message it can hold stays within the bound, nothing
is walked: the common answer costs one multiplication.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

_PER_FIELD = 4
"""Quotes, colon and comma around a field's name."""
_FIXED64 = 26
"""The most an 8-byte value prints as: `-2.2250738585072014e-308,` or `"18446744073709551615",`."""
_FIXED32 = 16
"""The most a 4-byte one prints as: `-1.17549435e-38,` or `-2147483648,`."""
_DEFAULT = 5
"""The most a default value prints as: `false`, `"0"` (an int64), `0.0`, `[]`, `{}`; an enum's, its name."""
_SCALAR_BYTE = 6
"""The most JSON one byte of a scalar prints as: a control character escaped as `\\u0000`, a one-byte varint of
an int64 as `"127",`."""
MAX_DEPTH = 100
"""Nesting walked, as protobuf's own parser allows; deeper bytes count as scalars (the parse refuses them)."""


@dataclass(frozen=True, slots=True)
class _Shape:
    names: int
    """JSON bytes of an occurrence's braces and of its fields without presence, each at its default."""
    named: dict[int, int]
    """Its fields with presence, by number: the JSON bytes of their names, counted where they are present."""
    enums: dict[int, int]
    """Its enum fields, by number: the most JSON one of their bytes prints as (a packed enum is a byte each)."""
    texts: dict[int, bool]
    """Its string and bytes fields, by number (True for bytes): each value is counted as it prints."""
    messages: dict[int, Descriptor]
    """Its message-typed fields (maps' entries included), by number: their bytes are walked as messages."""


@functools.lru_cache(maxsize=1024)
def _shape(descriptor: Descriptor) -> _Shape:
    names = 2  # the braces, and each field printed when absent (without presence) at its default
    named: dict[int, int] = {}
    for field in descriptor.fields:
        if field.has_presence:  # printed only when present, then its name counts
            named[field.number] = len(field.json_name) + _PER_FIELD
        else:
            names += len(field.json_name) + _PER_FIELD + _DEFAULT
    enums: dict[int, int] = {}
    texts: dict[int, bool] = {}
    messages: dict[int, Descriptor] = {}
    for field in descriptor.fields:
        if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
            texts[field.number] = field.type == FieldDescriptor.TYPE_BYTES
        elif field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type is not None:
            messages[field.number] = field.message_type
        elif field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
            longest = max((len(value.name) for value in field.enum_type.values), default=0)
            enums[field.number] = max(_SCALAR_BYTE, longest + _PER_FIELD)
            names += longest
    return _Shape(names, named, enums, texts, messages)


def _own_rate(descriptor: Descriptor) -> int:
    """The most JSON bytes per wire byte a message of `descriptor` prints as, its sub-messages aside (one present
    in two bytes, its tag and its length, prints at least its name and defaults)."""
    shape = _shape(descriptor)
    rate = max(_SCALAR_BYTE, *shape.enums.values(), -(-shape.names // 2))
    for number, name in shape.named.items():  # a field present in two bytes prints its name and value
        inner = shape.messages.get(number)
        value = _shape(inner).names if inner is not None else max(_SCALAR_BYTE, shape.enums.get(number, 0))
        rate = max(rate, -(-(name + value) // 2))
    return rate


def any_rate(descriptors: Iterable[Descriptor]) -> int:
    """The most JSON bytes per wire byte an `Any` can print as, packing one of `descriptors` (every message type
    of a service's): its `type_url` names the type, so costs at least the type's full name."""
    rate = _SCALAR_BYTE
    for descriptor in descriptors:
        packed = 2 + len("@type") + _PER_FIELD + _shape(descriptor).names
        rate = max(rate, _own_rate(descriptor), -(-packed // (len(descriptor.full_name) + 4)))
    return rate


@functools.lru_cache(maxsize=1024)
def worst_rate(descriptor: Descriptor, packed_rate: int) -> int:
    """The most JSON bytes per wire byte any occurrence of `descriptor`'s messages can print as; `packed_rate` for
    an `Any` among them (`any_rate`)."""
    seen: set[str] = set()
    rate = _SCALAR_BYTE
    pending = [descriptor]
    while pending:
        current = pending.pop()
        if current.full_name in seen:
            continue
        seen.add(current.full_name)
        rate = max(rate, packed_rate if current.full_name == _ANY else _own_rate(current))
        pending.extend(_shape(current).messages.values())
    return rate


def fits(message: type[Message], data: bytes, bound: int, packed_rate: int) -> bool:
    """Whether the JSON `data` (a `message`) prints as is estimated within `bound` bytes; walked only when its
    length at the worst rate of what it can hold would pass the bound. `packed_rate`: the `any_rate` of the
    service's types."""
    descriptor = descriptor_of(message)
    if _shape(descriptor).names + worst_rate(descriptor, packed_rate) * len(data) <= bound:
        return True
    return json_size(message, data, bound) <= bound


def json_size(message: type[Message], data: bytes, bound: int) -> int:
    """An estimate of the JSON `data` (a `message`) prints as, at least what it is; counting stops once past
    `bound`, and what it then answers is past `bound` too."""
    return _walk(descriptor_of(message), data, 0, len(data), bound, 0)


def descriptor_of(message: type[Message]) -> Descriptor:
    return cast(Descriptor, message.DESCRIPTOR)  # upb's descriptors have the same interface as the Python ones


def _walk(descriptor: Descriptor, data: bytes, start: int, end: int, bound: int, depth: int) -> int:
    if descriptor.full_name == _ANY:
        return _any(descriptor, data, start, end, bound, depth)
    shape = _shape(descriptor)
    total = shape.names
    position = start
    while position < end and total <= bound:
        key, position = _varint(data, position, end)
        wire, number = key & 7, key >> 3
        total += shape.named.get(number, 0)
        if wire == 0:
            begun = position
            _, position = _varint(data, position, end)
            total += shape.enums.get(number, _SCALAR_BYTE) * (position - begun)
        elif wire == 1:
            position += 8
            total += _FIXED64
        elif wire == 5:
            position += 4
            total += _FIXED32
        elif wire == 2:
            length, position = _varint(data, position, end)
            stop = min(position + length, end)
            is_bytes = shape.texts.get(number)
            inner = shape.messages.get(number)
            if is_bytes is not None:
                total += _text(data, position, stop, is_bytes)
            elif inner is not None and depth < MAX_DEPTH:
                total += _walk(inner, data, position, stop, bound - total, depth + 1)
            else:  # packed numbers or enums, or a field the service's types do not know
                total += shape.enums.get(number, _SCALAR_BYTE) * (stop - position)
            position += length
        elif wire not in (3, 4):  # not protobuf: its parse will say so
            return total + _SCALAR_BYTE * (end - position)
    return total


_ESCAPED = bytes([*range(0x20), ord('"'), ord("\\")])


def _text(data: bytes, start: int, end: int, is_bytes: bool) -> int:
    """What a string or bytes value prints as, at most: base64, or its UTF-8 with each escaped byte at its longest
    (`\\u0000`), in quotes with a comma."""
    length = end - start
    if is_bytes:
        return -(-length // 3) * 4 + 3
    value = data[start:end]
    return length + 5 * (length - len(value.translate(None, _ESCAPED))) + 3


def _varint(data: bytes, position: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while position < end:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80 or shift > 63:
            return value, position
        shift += 7
    return value, end


_ANY = "google.protobuf.Any"


def _any(descriptor: Descriptor, data: bytes, start: int, end: int, bound: int, depth: int) -> int:
    """An `Any` prints as the message it packs (every field of it, `@type` beside): its `value` is walked as the
    type its `type_url` names, when the service's types know it (when not, the JSON cannot be written at all)."""
    type_url, value = "", (start, start)
    position = start
    while position < end:
        key, position = _varint(data, position, end)
        if key & 7 != 2:  # not an Any's two fields: counted as scalars
            return 2 + _SCALAR_BYTE * (end - start)
        length, position = _varint(data, position, end)
        if key >> 3 == 1:
            type_url = bytes(data[position : position + length]).decode("utf-8", "replace")
        elif key >> 3 == 2:
            value = (position, min(position + length, end))
        position += length
    total = 2 + len("@type") + _PER_FIELD + len(type_url) + 3
    try:
        packed = descriptor.file.pool.FindMessageTypeByName(type_url.rsplit("/", 1)[-1])
    except KeyError:
        return total
    if depth >= MAX_DEPTH:
        return total
    return total + _walk(packed, data, value[0], value[1], bound - total, depth + 1)
