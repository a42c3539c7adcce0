"""When telemetry is on, as the environment says (read once, when a server command starts).

Spans follow the OpenTelemetry SDK's own variables: they are on when `OTEL_TRACES_EXPORTER` names an exporter
(`otlp` or `console`) or when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`,
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and off with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
The exporter itself reads the rest (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`,
`OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`...). Only OTLP over HTTP with protobuf is shipped.

Metrics are on with `APIMCP_METRICS=on` (or when `APIMCP_METRICS_TOKEN` is set): `/metrics` then answers, and
with a token only to `Authorization: Bearer <token>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EXPORTERS = frozenset({"otlp", "console", "none"})
_ON = frozenset({"1", "on", "true", "yes"})
_OFF = frozenset({"", "0", "off", "false", "no"})


class TelemetryConfigError(ValueError):
    """A variable telemetry cannot follow; the message names it."""


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    traces_exporter: str | None = None
    """`otlp` or `console`; None: no spans."""
    metrics: bool = False
    metrics_token: str | None = field(default=None, repr=False)

    @property
    def tracing(self) -> bool:
        return self.traces_exporter is not None


def config_from_environment(environ: Mapping[str, str]) -> TelemetryConfig:
    return TelemetryConfig(
        traces_exporter=_traces_exporter(environ), metrics=_metrics(environ), metrics_token=_token(environ)
    )


def _traces_exporter(environ: Mapping[str, str]) -> str | None:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    named = [part.strip().lower() for part in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if part.strip()]
    for name in named:
        if name not in EXPORTERS:
            raise TelemetryConfigError(
                f"OTEL_TRACES_EXPORTER: {name!r} is not shipped with apimcp (otlp, console or none)"
            )
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(variable, "").strip().lower()
        if protocol:
            if protocol != "http/protobuf":
                raise TelemetryConfigError(f"{variable}: only http/protobuf is shipped with apimcp, not {protocol!r}")
            break
    if named:
        chosen = [name for name in named if name != "none"]
        return chosen[0] if chosen else None
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return "otlp" if endpoint and endpoint.strip() else None


def _metrics(environ: Mapping[str, str]) -> bool:
    raw = environ.get("APIMCP_METRICS", "").strip().lower()
    if raw in _ON:
        return True
    if raw not in _OFF:
        raise TelemetryConfigError(f"APIMCP_METRICS: expected on or off, got {raw!r}")
    return raw == "" and _token(environ) is not None


def _token(environ: Mapping[str, str]) -> str | None:
    token = environ.get("APIMCP_METRICS_TOKEN", "").strip()
    return token or None
