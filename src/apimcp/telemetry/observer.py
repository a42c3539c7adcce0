"""An exposition's request observer: its spans and its metrics, beside its audit trail (`chained`); it hears
the calls scripts make into the exposition too (`call_started`, `call_finished`: `gateway.calls`), and, when
metrics are on, the requests refused at its door (`refused`, `limited`: `gateway.door`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from apimcp.guardrails.chain import Heard
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestObserver, RequestRecord
from apimcp.telemetry.active import Telemetry
from apimcp.telemetry.labels import error_code_label, method_label, refusal_label
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.server_spans import ServerSpans
from apimcp.telemetry.tallies import Count, Spread


class TelemetryObserver:
    """Hears every request of one exposition (labelled `organization/name`)."""

    __slots__ = ("_children", "_exposition", "_metrics", "_spans")

    def __init__(self, telemetry: Telemetry, exposition: str, revision: Callable[[], int]) -> None:
        self._exposition = exposition
        self._spans = ServerSpans(telemetry.tracing, exposition, revision) if telemetry.tracing else None
        self._metrics = telemetry.metrics
        self._children: dict[tuple[str, str, str], tuple[Count, Spread, Count | None]] = {}

    def request_started(self, method: str, target: str | None, source: RequestSource) -> None:
        if self._spans is not None:
            self._spans.started(method, target, source)

    def request_finished(self, record: RequestRecord) -> None:
        if self._spans is not None:
            self._spans.finished(record)
        metrics = self._metrics
        if metrics is None:
            return
        key = (method_label(record.method), record.outcome, error_code_label(record.error_code))
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = self._children_for(metrics, *key)
        requests, duration, errors = children
        requests.inc()
        duration.observe(record.duration_ms / 1000)
        if errors is not None:
            errors.inc()

    def call_started(self, tool: str, source: RequestSource, via: Mapping[str, str]) -> None:
        if self._spans is not None:
            self._spans.call_started(tool, via)

    def call_finished(self, record: RequestRecord, via: Mapping[str, str]) -> None:
        if self._spans is not None:
            self._spans.call_finished(record)
        metrics = self._metrics
        if metrics is not None:
            metrics.script_calls.labels(self._exposition, record.outcome).inc()

    def call_denied(self, tool: str, source: RequestSource, rule: str | None, via: Mapping[str, str] | None) -> None:
        """A call a policy denied: counted by rule."""
        metrics = self._metrics
        if metrics is not None:
            metrics.policy_denials.labels(self._exposition, rule or "").inc()

    def call_approval(
        self, tool: str, source: RequestSource, rule: str | None, outcome: str, via: Mapping[str, str] | None
    ) -> None:
        """A call that waited for a person's approval: counted by outcome."""
        metrics = self._metrics
        if metrics is not None:
            metrics.approvals.labels(self._exposition, outcome).inc()

    def call_guarded(self, tool: str, source: RequestSource, heard: Heard, via: Mapping[str, str] | None) -> None:
        """What a guardrail found: counted by guardrail and outcome."""
        metrics = self._metrics
        if metrics is not None:
            found = sum(finding.count for finding in heard.findings) or 1
            metrics.guardrail_findings.labels(self._exposition, heard.guardrail, heard.outcome).inc(found)

    def refused(self, reason: str, status: int, client: str | None, path: str) -> None:
        """A request the exposition's guard turned away (`gateway/door.py`): counted."""
        self._count_refused(reason)

    def limited(
        self, reason: str, retry_after: int, client: str | None, path: str, user: str | None, messages: int = 1
    ) -> None:
        """A request the exposition's rate limits refused, 429, or `messages` messages of a batch: each counted."""
        self._count_refused(reason, messages)

    def _count_refused(self, reason: str, count: int = 1) -> None:
        metrics = self._metrics
        if metrics is not None:
            metrics.refused_requests.labels(self._exposition, refusal_label(reason)).inc(count)

    def _children_for(
        self, metrics: Metrics, method: str, outcome: str, code: str
    ) -> tuple[Count, Spread, Count | None]:
        errors = metrics.mcp_errors.labels(self._exposition, method, code) if outcome == "error" else None
        return (
            metrics.mcp_requests.labels(self._exposition, method, outcome),
            metrics.mcp_duration.labels(self._exposition, method),
            errors,
        )


class _Chain:
    __slots__ = ("_observers",)

    def __init__(self, observers: tuple[RequestObserver, ...]) -> None:
        self._observers = observers

    def request_started(self, method: str, target: str | None, source: RequestSource) -> None:
        for observer in self._observers:
            observer.request_started(method, target, source)

    def request_finished(self, record: RequestRecord) -> None:
        for observer in self._observers:
            observer.request_finished(record)


def chained(*observers: RequestObserver | None) -> RequestObserver | None:
    """One observer for all of `observers` (None when there is none: the engine then does nothing)."""
    present = tuple(observer for observer in observers if observer is not None)
    if not present:
        return None
    return present[0] if len(present) == 1 else _Chain(present)
