"""A SERVER span per MCP request, open while its handler runs.

`request_started` opens the span (continuing the client's `traceparent` when it sent one) and makes it the
current OpenTelemetry context of the task that runs the request, so that spans made meanwhile (backend calls)
are its children; `request_finished`, in the same task, closes it with what the request became. The span is
named after the method, and after the method and target once the request did not fail (a target a client made
up does not name spans). No argument, header or session id is ever an attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord
from apimcp.telemetry.labels import bounded, resource_target
from apimcp.telemetry.tracing import Tracing

_TARGET_ATTRIBUTE = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}


@dataclass(frozen=True, slots=True)
class _Open:
    span: Span
    attached: Token[otel_context.Context]
    previous: _Open | None


_OPEN: ContextVar[_Open | None] = ContextVar("apimcp_server_span", default=None)


class ServerSpans:
    """The spans of one exposition's requests."""

    __slots__ = ("_exposition", "_revision", "_tracer", "_tracing")

    def __init__(self, tracing: Tracing, exposition: str, revision: Callable[[], int]) -> None:
        self._tracing = tracing
        self._tracer = tracing.tracer
        self._exposition = exposition
        self._revision = revision

    def started(self, method: str, target: str | None, source: RequestSource) -> None:
        parent = self._tracing.incoming(source.headers)
        attributes: dict[str, str | int] = {
            "mcp.method.name": method,
            "apimcp.exposition": self._exposition,
            "apimcp.snapshot.revision": self._revision(),
        }
        if target is not None:
            shown = resource_target(target) if method.startswith("resources/") else bounded(target)
            attributes["apimcp.target"] = shown
            attributes[_TARGET_ATTRIBUTE.get(method, "mcp.resource.uri")] = shown
        span = self._tracer.start_span(method, context=parent, kind=SpanKind.SERVER, attributes=attributes)
        attached = otel_context.attach(set_span_in_context(span, parent))
        _OPEN.set(_Open(span, attached, _OPEN.get()))

    def finished(self, record: RequestRecord) -> None:
        opened = _OPEN.get()
        if opened is None:
            return
        _OPEN.set(opened.previous)
        otel_context.detach(opened.attached)
        span = opened.span
        attributes: dict[str, str | int] = {"mcp.protocol.version": record.revision, "apimcp.outcome": record.outcome}
        if record.outcome == "error":
            if record.error_code is not None:
                attributes["rpc.jsonrpc.error_code"] = record.error_code
            attributes["error.type"] = str(record.error_code) if record.error_code is not None else "error"
            span.set_status(Status(StatusCode.ERROR, f"JSON-RPC error {record.error_code}"))
        else:
            if record.outcome == "tool_error":
                attributes["error.type"] = "tool_error"
                span.set_status(Status(StatusCode.ERROR, "the tool reported an error"))
            if record.target is not None:
                shown = resource_target(record.target) if record.method.startswith("resources/") else record.target
                span.update_name(f"{record.method} {bounded(shown)}")
        span.set_attributes(attributes)
        span.end()
