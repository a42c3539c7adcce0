"""Spans: where they are made (`Tracing`), sampled and sent, and W3C trace-context propagation.

apimcp makes its spans itself (`spans.py`) and sends them as OTLP/HTTP protobuf (`otlp_encoding.py`,
`export.py`): the OpenTelemetry SDK cost more than half of a gateway's throughput with every request traced
(bench/README.md), this path a small part of it. The wire (OTLP, `traceparent`) and the `OTEL_*` variables are
OpenTelemetry's, so any collector receives the spans and any SDK downstream continues the traces.
"""

from __future__ import annotations

from collections.abc import Mapping

from apimcp import __version__
from apimcp.telemetry.environment import batch_settings_from, otlp_settings_from, resource_from
from apimcp.telemetry.export import BatchExporter, BatchSettings, ConsoleSender, OtlpHttpSender, OtlpSettings
from apimcp.telemetry.otlp_encoding import Encoder
from apimcp.telemetry.sampling import Sampler, sampler_from
from apimcp.telemetry.spans import SERVER, Attributes, Span, SpanSink, new_id
from apimcp.telemetry.trace_context import SAMPLED, Headers, SpanContext, incoming

SCOPE_NAME = "apimcp"


class Tracing:
    """Makes the SERVER spans of requests (their CLIENT spans are their children) and sends the sampled ones."""

    def __init__(self, sink: SpanSink, sampler: Sampler | None = None) -> None:
        self.sink = sink
        self.sampler = sampler or Sampler()

    @staticmethod
    def incoming(headers: Headers) -> SpanContext | None:
        """The trace context a client sent (None: a new trace)."""
        return incoming(headers)

    def server_span(self, name: str, parent: SpanContext | None, attributes: Attributes) -> Span:
        trace_id = parent.trace_id if parent is not None else new_id(128) or 1
        sampled = self.sampler.sampled(trace_id, parent)
        return Span(
            self.sink if sampled else None,
            name,
            SERVER,
            trace_id,
            parent.span_id if parent is not None else 0,
            SAMPLED if sampled else 0,
            parent.tracestate if parent is not None else "",
            attributes,
        )

    def shutdown(self) -> None:
        """Send what is queued and stop."""
        self.sink.shutdown()


def otlp_tracing(
    settings: OtlpSettings,
    resource: Mapping[str, str | int | bool],
    batch: BatchSettings | None = None,
    sampler: Sampler | None = None,
) -> Tracing:
    sender = OtlpHttpSender(settings, Encoder(resource, SCOPE_NAME, __version__))
    return Tracing(BatchExporter(sender, batch or BatchSettings()), sampler)


def tracing_from_environment(exporter: str, environ: Mapping[str, str]) -> Tracing:
    """`otlp` (OTLP/HTTP protobuf) or `console` (JSON lines on stdout), configured by the `OTEL_*` variables."""
    batch, sampler = batch_settings_from(environ), sampler_from(environ)
    if exporter == "console":
        return Tracing(BatchExporter(ConsoleSender(), batch), sampler)
    return otlp_tracing(otlp_settings_from(environ), resource_from(environ), batch, sampler)
