"""The process's telemetry: off unless a server command installs what the environment asks for.

Whatever runs servers (the CLI) installs it once before building them; what builds expositions or APIs reads
`installed()`, or is given a `Telemetry` (tests do). Off, nothing is instrumented: expositions get no observer
and backends no wrapper, so the request path pays nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from apimcp.telemetry.config import TelemetryConfig, config_from_environment
from apimcp.telemetry.metrics import Metrics
from apimcp.telemetry.tracing import Tracing, tracing_from_environment

log = logging.getLogger("apimcp.telemetry")


@dataclass(frozen=True, slots=True)
class Telemetry:
    tracing: Tracing | None = None
    metrics: Metrics | None = None
    metrics_token: str | None = field(default=None, repr=False)
    """`/metrics` answers only to `Authorization: Bearer <token>` when set."""

    @property
    def on(self) -> bool:
        return self.tracing is not None or self.metrics is not None

    @classmethod
    def from_config(cls, config: TelemetryConfig, environ: Mapping[str, str]) -> Telemetry:
        if config.traces_exporter is None and not config.metrics:
            return OFF
        tracing = None
        if config.traces_exporter is not None:
            tracing = tracing_from_environment(config.traces_exporter, environ)
        return cls(tracing=tracing, metrics=Metrics() if config.metrics else None, metrics_token=config.metrics_token)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Telemetry:
        """Raises `TelemetryConfigError` naming a variable it cannot follow."""
        return cls.from_config(config_from_environment(environ), environ)


OFF = Telemetry()
_installed = [OFF]


def install(telemetry: Telemetry) -> None:
    if telemetry.metrics is not None and telemetry.metrics_token is None:
        log.warning("/metrics is open to whoever reaches this port (set APIMCP_METRICS_TOKEN to require a token)")
    _installed[0] = telemetry


def installed() -> Telemetry:
    return _installed[0]


def flush() -> None:
    """Send the spans still queued and stop exporting: for a process that ends without running `atexit`
    handlers (a `--workers` worker ends with `os._exit`)."""
    tracing = _installed[0].tracing
    if tracing is not None:
        tracing.shutdown()
