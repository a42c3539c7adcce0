"""The OTLP encoder against the official protobuf classes: what it writes decodes to the span it was given,
whatever its encoded-attribute cache already holds."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from apimcp.telemetry.otlp_encoding import Encoder
from apimcp.telemetry.spans import CLIENT, SERVER, Attributes, Span


def _span(attributes: Attributes, parent: int = 0) -> Span:
    span = Span(None, "tools/call get_item", SERVER if not parent else CLIENT, 0xABC, parent, 1, "k=v", attributes)
    span.end_ns = span.start_ns + 5
    return span


def _decoded(encoder: Encoder, spans: list[Span]) -> list[dict[str, object]]:
    message = ExportTraceServiceRequest()
    message.ParseFromString(encoder.request(spans))
    out = []
    for span in message.resource_spans[0].scope_spans[0].spans:
        values: dict[str, object] = {}
        for attribute in span.attributes:
            kind = attribute.value.WhichOneof("value")
            assert kind is not None
            values[attribute.key] = (kind, getattr(attribute.value, kind))
        out.append(values)
    return out


def test_a_boolean_and_an_integer_under_one_key_keep_their_own_types_in_the_cache() -> None:
    encoder = Encoder({"service.name": "apimcp"}, "apimcp", "1")
    spans = [_span({"flag": True, "n": 1}), _span({"flag": 1, "n": True}, parent=7), _span({"flag": True, "n": 1})]
    assert _decoded(encoder, spans) == [
        {"flag": ("bool_value", True), "n": ("int_value", 1)},
        {"flag": ("int_value", 1), "n": ("bool_value", True)},
        {"flag": ("bool_value", True), "n": ("int_value", 1)},
    ]


def test_a_second_batch_read_from_the_cache_is_byte_for_byte_the_first() -> None:
    encoder = Encoder({"service.name": "apimcp"}, "apimcp", "1")
    spans = [_span({"mcp.method.name": "tools/call", "apimcp.snapshot.revision": 3, "é": "ünïcode"})]
    first = encoder.request(spans)
    assert encoder.request(spans) == first
    assert Encoder({"service.name": "apimcp"}, "apimcp", "1").request(spans) == first
    assert _decoded(encoder, spans) == [
        {"mcp.method.name": ("string_value", "tools/call"), "apimcp.snapshot.revision": ("int_value", 3),
         "é": ("string_value", "ünïcode")}
    ]  # fmt: skip
