"""Metrics of an exposition's resilient backends: retries, circuit breakers' changes and refusals, and what its
answer cache served (`apimcp.resilience`)."""

from __future__ import annotations

from collections.abc import Callable

from apimcp.resilience.cache import Outcome
from apimcp.telemetry.metrics import Metrics


def resilience_heard(metrics: Metrics | None, exposition: str) -> Callable[[str, str], None]:
    """An observer of `ResilientBackend`: each retry, breaker opening, closing and refusal counted."""

    def heard(event: str, tool: str) -> None:
        if metrics is not None:
            metrics.resilience_events.labels(exposition, event).inc()

    return heard


def cache_heard(metrics: Metrics | None, exposition: str) -> Callable[[Outcome], None]:
    def heard(outcome: Outcome) -> None:
        if metrics is not None:
            metrics.answer_cache.labels(exposition, outcome).inc()

    return heard
