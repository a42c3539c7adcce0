"""Spans: a tracer provider of apimcp's own (the global one is left to the application embedding it), its
exporter, and W3C trace-context propagation (`traceparent`, `tracestate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Span, Tracer, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from apimcp import __version__

DEFAULT_SERVICE_NAME = "apimcp"
Headers = Sequence[tuple[bytes, bytes]]


class _HeaderGetter(Getter[Headers]):
    """Reads an ASGI scope's headers (lower-case byte names) for the propagator."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        name = key.lower().encode("latin-1")
        values = [value.decode("latin-1") for header, value in carrier if header == name]
        return values or None

    def keys(self, carrier: Headers) -> list[str]:
        return [header.decode("latin-1") for header, _ in carrier]


_GETTER = _HeaderGetter()


class Tracing:
    """Where spans are made and sent."""

    def __init__(self, exporter: SpanExporter, resource: Resource | None = None) -> None:
        self.provider = TracerProvider(resource=resource or Resource.create())
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer: Tracer = self.provider.get_tracer("apimcp", __version__)
        self._propagator = TraceContextTextMapPropagator()

    def incoming(self, headers: Headers) -> Context | None:
        """The trace context a client sent (None without a `traceparent`: a new trace)."""
        for name, _ in headers:
            if name == b"traceparent":
                return self._propagator.extract(headers, getter=_GETTER)
        return None

    def outgoing(self, span: Span) -> dict[str, str]:
        """The headers that make `span` the parent of what a backend does."""
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=set_span_in_context(span))
        return carrier

    def shutdown(self) -> None:
        """Send what is buffered and stop (the SDK also does it at exit)."""
        self.provider.shutdown()


def resource_from(environ: Mapping[str, str]) -> Resource:
    """The SDK's resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), named `apimcp` when they name none."""
    named = environ.get("OTEL_SERVICE_NAME", "").strip() or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return Resource.create() if named else Resource.create({SERVICE_NAME: DEFAULT_SERVICE_NAME})


def exporter_for(name: str) -> SpanExporter:
    """`otlp`: OTLP over HTTP, configured by the `OTEL_EXPORTER_OTLP_*` variables; `console`: stdout."""
    if name == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415

    return OTLPSpanExporter()
