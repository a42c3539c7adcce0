"""Every Prometheus metric apimcp serves, in a registry of its own (docs/telemetry.md lists them).

Label values are bounded (`labels.py`). Counters and histograms are updated on the request path through
children looked up once per label set (`Metrics.child` keeps them), never by `labels()` per request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.process_collector import ProcessCollector

from apimcp.telemetry.gauges import GatewayFigures, GaugeCollector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
M = TypeVar("M", bound=MetricWrapperBase)


class Metrics:
    """The registry `/metrics` serves, and the metrics in it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.mcp_requests = Counter(
            "apimcp_mcp_requests", "MCP requests answered, by exposition, method and outcome",
            ["exposition", "method", "outcome"], registry=registry,
        )  # fmt: skip
        self.mcp_errors = Counter(
            "apimcp_mcp_errors", "MCP requests answered with a JSON-RPC error, by exposition, method and code",
            ["exposition", "method", "code"], registry=registry,
        )  # fmt: skip
        self.mcp_duration = Histogram(
            "apimcp_mcp_request_duration_seconds", "Time to answer an MCP request, by exposition and method",
            ["exposition", "method"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.script_calls = Counter(
            "apimcp_script_calls", "Tool calls scripts made into an exposition, by exposition and outcome",
            ["exposition", "outcome"], registry=registry,
        )  # fmt: skip
        self.policy_denials = Counter(
            "apimcp_policy_denials", "Tool calls a policy rule denied, by exposition and rule",
            ["exposition", "rule"], registry=registry,
        )  # fmt: skip
        self.approvals = Counter(
            "apimcp_approvals", "Tool calls that waited for a person's approval, by exposition and outcome",
            ["exposition", "outcome"], registry=registry,
        )  # fmt: skip
        self.guardrail_findings = Counter(
            "apimcp_guardrail_findings", "What guardrails found in calls' arguments and answers, by exposition, "
            "guardrail and outcome (reported, redacted, blocked)", ["exposition", "guardrail", "outcome"],
            registry=registry,
        )  # fmt: skip
        self.resilience_events = Counter(
            "apimcp_backend_resilience", "Retries of backend calls and circuit breakers' changes (retry, breaker_open, "
            "breaker_closed, refused), by exposition and event", ["exposition", "event"], registry=registry,
        )  # fmt: skip
        self.answer_cache = Counter(
            "apimcp_answer_cache", "Read-only tools' calls answered from the cache (hit), made (miss) or joined to an "
            "identical call (coalesced), by exposition and outcome", ["exposition", "outcome"], registry=registry,
        )  # fmt: skip
        self.refused_requests = Counter(
            "apimcp_refused_requests",
            "MCP requests an exposition refused before reading them (authentication, rate limits), by exposition "
            "and reason", ["exposition", "reason"], registry=registry,
        )  # fmt: skip
        self.backend_duration = Histogram(
            "apimcp_backend_call_duration_seconds",
            "Time of a backend call (REST, GraphQL, gRPC), by exposition, kind and outcome",
            ["exposition", "kind", "outcome"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self.control_requests = Counter(
            "apimcp_control_plane_requests", "Control-plane API requests, by method, route template and status",
            ["method", "route", "status"], registry=registry,
        )  # fmt: skip
        self.control_duration = Histogram(
            "apimcp_control_plane_request_duration_seconds", "Time to answer a control-plane API request",
            ["method", "route"], buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        self._gauges = GaugeCollector()
        registry.register(self._gauges)
        ProcessCollector(registry=registry)
        self._children: dict[tuple[int, Hashable], object] = {}
        self._lock = threading.Lock()

    def watch_gateway(self, figures: Callable[[], GatewayFigures]) -> None:
        """Read `figures` at each scrape (a process serves one gateway: the last one given)."""
        self._gauges.source = figures

    def child(self, metric: M, *values: str) -> M:
        """`metric.labels(*values)`, looked up once."""
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            with self._lock:
                found = self._children[key] = metric.labels(*values)
        return found  # type: ignore[return-value]
