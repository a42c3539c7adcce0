"""Every Prometheus metric apimcp serves, in a registry of its own (docs/telemetry.md lists them).

Label values are bounded (`labels.py`). Counters and histograms are apimcp's own (`tallies.py`: no lock per
update), read by the registry when `/metrics` is scraped, beside prometheus_client's process collector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.process_collector import ProcessCollector

from apimcp.telemetry.gauges import GatewayFigures, GaugeCollector
from apimcp.telemetry.tallies import CounterTally, HistogramTally

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    """The registry `/metrics` serves, and the metrics in it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.mcp_requests = self._counter(
            "apimcp_mcp_requests", "MCP requests answered, by exposition, method and outcome",
            ["exposition", "method", "outcome"],
        )  # fmt: skip
        self.mcp_errors = self._counter(
            "apimcp_mcp_errors", "MCP requests answered with a JSON-RPC error, by exposition, method and code",
            ["exposition", "method", "code"],
        )  # fmt: skip
        self.mcp_duration = self._histogram(
            "apimcp_mcp_request_duration_seconds", "Time to answer an MCP request, by exposition and method",
            ["exposition", "method"], LATENCY_BUCKETS,
        )  # fmt: skip
        self.script_calls = self._counter(
            "apimcp_script_calls", "Tool calls scripts made into an exposition, by exposition and outcome",
            ["exposition", "outcome"],
        )  # fmt: skip
        self.policy_denials = self._counter(
            "apimcp_policy_denials", "Tool calls a policy rule denied, by exposition and rule",
            ["exposition", "rule"],
        )  # fmt: skip
        self.approvals = self._counter(
            "apimcp_approvals", "Tool calls that waited for a person's approval, by exposition and outcome",
            ["exposition", "outcome"],
        )  # fmt: skip
        self.guardrail_findings = self._counter(
            "apimcp_guardrail_findings", "What guardrails found in calls' arguments and answers, by exposition, "
            "guardrail and outcome (reported, redacted, blocked)", ["exposition", "guardrail", "outcome"],
        )  # fmt: skip
        self.resilience_events = self._counter(
            "apimcp_backend_resilience", "Retries of backend calls and circuit breakers' changes (retry, breaker_open, "
            "breaker_closed, refused), by exposition and event", ["exposition", "event"],
        )  # fmt: skip
        self.answer_cache = self._counter(
            "apimcp_answer_cache", "Read-only tools' calls answered from the cache (hit), made (miss) or joined to an "
            "identical call (coalesced), by exposition and outcome", ["exposition", "outcome"],
        )  # fmt: skip
        self.refused_requests = self._counter(
            "apimcp_refused_requests",
            "MCP requests an exposition refused before reading them (authentication, rate limits), by exposition "
            "and reason", ["exposition", "reason"],
        )  # fmt: skip
        self.backend_duration = self._histogram(
            "apimcp_backend_call_duration_seconds",
            "Time of a backend call (REST, GraphQL, gRPC), by exposition, kind and outcome",
            ["exposition", "kind", "outcome"], LATENCY_BUCKETS,
        )  # fmt: skip
        self.control_requests = self._counter(
            "apimcp_control_plane_requests", "Control-plane API requests, by method, route template and status",
            ["method", "route", "status"],
        )  # fmt: skip
        self.control_duration = self._histogram(
            "apimcp_control_plane_request_duration_seconds", "Time to answer a control-plane API request",
            ["method", "route"], LATENCY_BUCKETS,
        )  # fmt: skip
        self._gauges = GaugeCollector()
        registry.register(self._gauges)
        ProcessCollector(registry=registry)

    def _counter(self, name: str, documentation: str, labelnames: Sequence[str]) -> CounterTally:
        tally = CounterTally(name, documentation, labelnames)
        self.registry.register(tally)
        return tally

    def _histogram(
        self, name: str, documentation: str, labelnames: Sequence[str], buckets: Sequence[float]
    ) -> HistogramTally:
        tally = HistogramTally(name, documentation, labelnames, buckets)
        self.registry.register(tally)
        return tally

    def watch_gateway(self, figures: Callable[[], GatewayFigures]) -> None:
        """Read `figures` at each scrape (a process serves one gateway: the last one given)."""
        self._gauges.source = figures
