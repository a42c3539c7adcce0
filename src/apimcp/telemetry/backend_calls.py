"""A backend call as telemetry sees it: a CLIENT span (child of the request's SERVER span) whose trace context
the backend receives, and its latency in `apimcp_backend_call_duration_seconds`.

`InstrumentedBackend` wraps any `Backend` (REST, GraphQL, gRPC) the same way; the trace-context headers it
passes on replace the client's through `forwarding.policy.with_trace_context`, the one place that writes them
(gRPC backends send them as metadata). Arguments, credentials and answers are never attributes; a failure is
told by its status alone (its message may quote the backend).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from opentelemetry.trace import SpanKind, Status, StatusCode, get_current_span

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, Progress
from apimcp.catalog.model import GraphQLBinding, GrpcBinding, Operation, RestBinding
from apimcp.forwarding.policy import with_trace_context
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.tracing import Tracing

Attributes = dict[str, str | int | bool]


def describe(kind: str, operation: Operation) -> tuple[str, Attributes]:
    """A span name of bounded cardinality (the operation's template, not its values) and attributes."""
    binding = operation.binding
    attributes: Attributes = {"apimcp.backend.kind": kind, "apimcp.operation": operation.tool_name}
    if isinstance(binding, RestBinding):
        attributes["http.request.method"] = binding.method
        attributes["url.template"] = binding.path
        return f"{binding.method} {binding.path}", attributes
    if isinstance(binding, GraphQLBinding):
        attributes["graphql.operation.type"] = binding.operation_type
        attributes["graphql.operation.name"] = binding.operation_name
        return f"{binding.operation_type} {binding.root_field}", attributes
    if isinstance(binding, GrpcBinding):
        attributes["rpc.system"] = "grpc"
        attributes["rpc.service"] = binding.service
        attributes["rpc.method"] = binding.method
        return f"{binding.service}/{binding.method}", attributes
    return operation.tool_name, attributes


def outcome_of(result: BackendResult) -> str:
    return "failure" if isinstance(result, Failure) else "success"


class InstrumentedBackend(Backend):
    """`inner`, with a span and a latency figure per call."""

    def __init__(
        self, inner: Backend, kind: str, exposition: str, tracing: Tracing | None, metrics: Metrics | None
    ) -> None:
        self.inner = inner
        self._kind = kind
        self._exposition = exposition
        self._tracing = tracing
        self._metrics = metrics

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        tracing = self._tracing
        if tracing is None:
            return await self._timed(operation, arguments, progress, extras)
        current = get_current_span()
        if not current.is_recording():
            # a request not sampled (or none): no span of its own; the backend still learns the trace (and that
            # it is not sampled) from the request's span context, when there is one
            if current.get_span_context().is_valid:
                headers = with_trace_context(extras.headers if extras is not None else {}, tracing.outgoing(current))
                extras = replace(extras, headers=headers) if extras is not None else CallExtras(headers=headers)
            return await self._timed(operation, arguments, progress, extras)
        name, attributes = describe(self._kind, operation)
        # the request's SERVER span is the current context; this one need not be (nothing is made inside it)
        span = tracing.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=attributes)
        try:
            headers = with_trace_context(extras.headers if extras is not None else {}, tracing.outgoing(span))
            traced = replace(extras, headers=headers) if extras is not None else CallExtras(headers=headers)
            result = await self._timed(operation, arguments, progress, traced)
        except BaseException as exc:
            span.set_attributes({"error.type": type(exc).__qualname__})
            span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            span.end()
            raise
        status = getattr(result, "status", None)
        if isinstance(status, int) and self._kind != "grpc":  # a gRPC result's status is not the call's code
            span.set_attribute("http.response.status_code", status)
        if isinstance(result, Failure):
            span.set_attribute("error.type", str(status) if status is not None else "failure")
            span.set_status(Status(StatusCode.ERROR, f"backend failure (status {status})"))
        span.end()
        return result

    async def _timed(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None, extras: CallExtras | None
    ) -> BackendResult:
        metrics = self._metrics
        if metrics is None:
            return await self.inner.call(operation, arguments, progress, extras)
        started = time.perf_counter()
        outcome = "exception"
        try:
            result = await self.inner.call(operation, arguments, progress, extras)
            outcome = outcome_of(result)
            return result
        finally:
            histogram = metrics.child(metrics.backend_duration, self._exposition, self._kind, outcome)
            histogram.observe(time.perf_counter() - started)

    async def close(self) -> None:
        await self.inner.close()
