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
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, Progress
from apimcp.catalog.model import GraphQLBinding, GrpcBinding, McpBinding, Operation, RestBinding
from apimcp.forwarding.policy import with_trace_context
from apimcp.telemetry.labels import resource_target
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.server_spans import current_span
from apimcp.telemetry.spans import CLIENT, Attributes
from apimcp.telemetry.tracing import Tracing


def describe(kind: str, operation: Operation) -> tuple[str, Attributes]:
    """A span name of bounded cardinality (the operation's template, not its values) and attributes."""
    binding = operation.binding
    attributes: Attributes = {"apimcp.backend.kind": kind, "apimcp.operation": operation.tool_name}
    if isinstance(binding, RestBinding):
        # an operation's path template, or the path a resource read names (from the client's URI: without its
        # query, where a credential might be, and bounded, as the request's own span shows it)
        path = resource_target(binding.path)
        attributes["http.request.method"] = binding.method
        attributes["url.template"] = path
        return f"{binding.method} {path}", attributes
    if isinstance(binding, GraphQLBinding):
        attributes["graphql.operation.type"] = binding.operation_type
        attributes["graphql.operation.name"] = binding.operation_name
        return f"{binding.operation_type} {binding.root_field}", attributes
    if isinstance(binding, GrpcBinding):
        attributes["rpc.system"] = "grpc"
        attributes["rpc.service"] = binding.service
        attributes["rpc.method"] = binding.method
        return f"{binding.service}/{binding.method}", attributes
    if isinstance(binding, McpBinding):
        attributes["mcp.method.name"] = "tools/call"
        attributes["gen_ai.tool.name"] = binding.name
        return f"tools/call {binding.name}", attributes
    return operation.tool_name, attributes


def _traced(extras: CallExtras | None, trace_headers: dict[str, str]) -> CallExtras:
    if extras is None:
        return CallExtras(headers=trace_headers)  # nothing of the client's to replace
    # made field by field: `dataclasses.replace` reads the class's fields on every call
    headers = with_trace_context(extras.headers, trace_headers, own=True)
    return CallExtras(headers=headers, credentials=extras.credentials, mask=extras.mask, client=extras.client)


_MAX_DESCRIBED = 4096
"""Operations described per backend (a service has that many at most, nearly always)."""


class InstrumentedBackend(Backend):
    """`inner`, with a span and a latency figure per call."""

    def __init__(
        self, inner: Backend, kind: str, exposition: str, tracing: Tracing | None, metrics: Metrics | None
    ) -> None:
        self.inner = inner
        self._kind = kind
        self._tracing = tracing
        self._send = inner.call if metrics is None else TimedBackend(inner, kind, exposition, metrics).call
        """How a call reaches `inner`: timed when metrics are on, else directly (one coroutine less)."""
        self._described: dict[int, tuple[Operation, str, Attributes]] = {}
        """Each operation's span name and attributes, made on its first traced call."""

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        current = current_span() if self._tracing is not None else None
        if current is None:
            return await self._send(operation, arguments, progress, extras)
        if not current.recording:
            # a request not sampled: no span of its own; the backend still learns the trace (and that it is not
            # sampled) from the request's span
            return await self._send(operation, arguments, progress, _traced(extras, current.outgoing()))
        described = self._described.get(id(operation))
        if described is None or described[0] is not operation:
            if len(self._described) >= _MAX_DESCRIBED:
                self._described.clear()
            # the operation is kept with its description: its id is not another's while it is here
            described = self._described[id(operation)] = (operation, *describe(self._kind, operation))
        name, attributes = described[1], dict(described[2])  # a copy: the call's outcome is added to it
        span = current.child(name, CLIENT, attributes)
        try:
            result = await self._send(operation, arguments, progress, _traced(extras, span.outgoing()))
        except BaseException as exc:
            attributes["error.type"] = type(exc).__qualname__
            span.fail(type(exc).__qualname__)
            span.end()
            raise
        status = getattr(result, "status", None)
        if isinstance(status, int) and self._kind != "grpc":  # a gRPC result's status is not the call's code
            attributes["http.response.status_code"] = status
        if isinstance(result, Failure):
            attributes["error.type"] = str(status) if status is not None else "failure"
            span.fail(f"backend failure (status {status})")
        span.end()
        return result

    async def close(self) -> None:
        await self.inner.close()


class TimedBackend(Backend):
    """`inner`, with the latency of each call in `apimcp_backend_call_duration_seconds` (metrics without spans:
    what `instrumented` gives then)."""

    def __init__(self, inner: Backend, kind: str, exposition: str, metrics: Metrics) -> None:
        self.inner = inner
        self._histograms = {
            outcome: metrics.backend_duration.labels(exposition, kind, outcome)
            for outcome in ("success", "failure", "exception")
        }

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        started = time.perf_counter()
        outcome = "exception"
        try:
            result = await self.inner.call(operation, arguments, progress, extras)
            outcome = "failure" if isinstance(result, Failure) else "success"
            return result
        finally:
            self._histograms[outcome].observe(time.perf_counter() - started)

    async def close(self) -> None:
        await self.inner.close()


def instrumented(
    inner: Backend, kind: str, exposition: str, tracing: Tracing | None, metrics: Metrics | None
) -> Backend:
    """`inner` as telemetry sees it: spans (and latencies, with metrics) with tracing on, else latencies alone."""
    if tracing is None and metrics is not None:
        return TimedBackend(inner, kind, exposition, metrics)
    return InstrumentedBackend(inner, kind, exposition, tracing, metrics)
