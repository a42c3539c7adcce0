"""Spans as OTLP protobuf (`ExportTraceServiceRequest`), encoded by hand: the fields apimcp's spans have.

The official message classes cost about 30 µs a span to fill and serialize; this costs a few, which matters
because a gateway exports two spans per request. Attributes repeat (method, exposition, operation), so their
encodings are cached (bounded). `tests/telemetry` decodes what is sent with the official classes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping

from apimcp.telemetry.spans import AttributeValue, Span

_CACHE_LIMIT = 8192
_fixed64 = struct.Struct("<Q").pack
_fixed32 = struct.Struct("<I").pack
_double = struct.Struct("<d").pack


def _varint(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field."""
    return tag + _varint(len(payload)) + payload


def _any_value(value: AttributeValue | float) -> bytes:
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF)  # int64: negatives as two's complement
    if isinstance(value, float):
        return b"\x21" + _double(value)
    return _field(b"\x0a", str(value).encode("utf-8", "replace"))


def key_value(key: str, value: AttributeValue | float) -> bytes:
    return _field(b"\x0a", key.encode()) + _field(b"\x12", _any_value(value))


class Encoder:
    """Encodes batches for one resource (the process) and one instrumentation scope (apimcp)."""

    def __init__(self, resource: Mapping[str, AttributeValue], scope_name: str, scope_version: str) -> None:
        resource_body = b"".join(_field(b"\x0a", key_value(k, v)) for k, v in resource.items())
        self._resource = _field(b"\x0a", resource_body)  # ResourceSpans.resource
        self._scope = _field(b"\x0a", _field(b"\x0a", scope_name.encode()) + _field(b"\x12", scope_version.encode()))
        self._attributes: dict[tuple[str, type, AttributeValue], bytes] = {}
        self._names: dict[str, bytes] = {}

    def _attribute(self, key: str, value: AttributeValue) -> bytes:
        cache_key = (key, value.__class__, value)  # the type too: True == 1 in a dict (`span` reads it so)
        encoded = self._attributes.get(cache_key)
        if encoded is None:
            if len(self._attributes) >= _CACHE_LIMIT:
                self._attributes.clear()
            encoded = self._attributes[cache_key] = _field(b"\x4a", key_value(key, value))
        return encoded

    def _name(self, name: str) -> bytes:
        encoded = self._names.get(name)
        if encoded is None:
            if len(self._names) >= _CACHE_LIMIT:
                self._names.clear()
            encoded = self._names[name] = _field(b"\x2a", name.encode("utf-8", "replace"))
        return encoded

    def span(self, span: Span) -> bytes:
        parts = [b"\x0a\x10", span.trace_id.to_bytes(16, "big"), b"\x12\x08", span.span_id.to_bytes(8, "big")]
        if span.tracestate:
            parts.append(_field(b"\x1a", span.tracestate.encode("utf-8", "replace")))
        if span.parent_id:
            parts += (b"\x22\x08", span.parent_id.to_bytes(8, "big"))
        parts += (self._names.get(span.name) or self._name(span.name), b"\x30", bytes((span.kind,)),
                  b"\x39", _fixed64(span.start_ns), b"\x41", _fixed64(span.end_ns))  # fmt: skip
        # the cache read inline: a method call per attribute cost a fifth of the span's encoding
        attributes = self._attributes
        for key, value in span.attributes.items():
            encoded = attributes.get((key, value.__class__, value))
            parts.append(encoded if encoded is not None else self._attribute(key, value))
        if span.status_code:
            status = b"\x18" + bytes((span.status_code,))
            if span.status_message:
                status = _field(b"\x12", span.status_message.encode("utf-8", "replace")) + status
            parts.append(_field(b"\x7a", status))
        parts += (b"\x85\x01", _fixed32(span.flags))  # Span.flags: the W3C trace flags
        return _field(b"\x12", b"".join(parts))  # ScopeSpans.spans

    def request(self, spans: Iterable[Span]) -> bytes:
        """An `ExportTraceServiceRequest` holding `spans`."""
        scope_spans = _field(b"\x12", self._scope + b"".join(self.span(span) for span in spans))
        return _field(b"\x0a", self._resource + scope_spans)
