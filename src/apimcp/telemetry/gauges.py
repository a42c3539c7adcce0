"""Figures read when `/metrics` is scraped, not counted on the request path: open sessions and streams, the
snapshot revision served, how far behind the control plane the gateway may be, the MCP servers' health."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector


@dataclass(frozen=True, slots=True)
class GatewayFigures:
    revision: int
    """The snapshot revision served (-1: none yet)."""
    expositions: int
    open_streams: Mapping[str, int] = field(default_factory=dict)
    """Open GET and listen streams, by exposition."""
    open_sessions: int | None = None
    """Sessions in this process's store (None: a shared store, whose count is not this gateway's)."""
    sync_connected: bool | None = None
    """Whether the gateway follows a control plane right now (None: it follows none, e.g. a configuration file)."""
    sync_lag_seconds: float | None = None
    """0 while following; else the seconds since the gateway last knew it served the latest revision."""
    upstreams: Mapping[str, int] = field(default_factory=dict)
    """The MCP servers the gateway fronts, counted by state (`up`, `failing`, `unknown`): counts only, as in
    /healthz (a gateway serves several organizations, and a scrape must not name their servers)."""


class GaugeCollector(Collector):
    def __init__(self) -> None:
        self.source: Callable[[], GatewayFigures] | None = None

    def collect(self) -> Iterator[Metric]:
        source = self.source
        if source is None:
            return
        figures = source()
        yield _gauge("apimcp_snapshot_revision", "The snapshot revision the gateway serves", figures.revision)
        yield _gauge("apimcp_expositions", "Expositions the gateway serves", figures.expositions)
        streams = GaugeMetricFamily(
            "apimcp_open_streams", "Open GET and subscriptions/listen streams, by exposition", labels=["exposition"]
        )
        for exposition, count in sorted(figures.open_streams.items()):
            streams.add_metric([exposition], count)
        yield streams
        upstreams = GaugeMetricFamily(
            "apimcp_upstreams", "MCP servers the gateway fronts, by whether they answer", labels=["state"]
        )
        for state in ("up", "failing", "unknown"):
            upstreams.add_metric([state], figures.upstreams.get(state, 0))
        yield upstreams
        if figures.open_sessions is not None:
            yield _gauge("apimcp_open_sessions", "Sessions held by this gateway's store", figures.open_sessions)
        if figures.sync_connected is not None:
            yield _gauge(
                "apimcp_sync_connected", "1 while the gateway follows its control plane", int(figures.sync_connected)
            )
        if figures.sync_lag_seconds is not None:
            yield _gauge(
                "apimcp_sync_lag_seconds",
                "0 while following the control plane; else seconds since the gateway last knew it was up to date",
                figures.sync_lag_seconds,
            )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)
