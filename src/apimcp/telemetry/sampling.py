"""Which traces are recorded: the OpenTelemetry samplers `OTEL_TRACES_SAMPLER` names, decided per trace id.

`parentbased_*` follow the client's sampled flag when it sent a trace, else their root sampler; `traceidratio`
keeps a trace when the low 64 bits of its id fall under the ratio (so every participant using the same rule
keeps the same traces).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apimcp.telemetry.config import TelemetryConfigError
from apimcp.telemetry.trace_context import SpanContext

_LOW_64 = (1 << 64) - 1
SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off",
            "parentbased_traceidratio")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Sampler:
    ratio: float = 1.0
    """Of root traces (1: all, 0: none)."""
    parent_based: bool = True

    def sampled(self, trace_id: int, parent: SpanContext | None) -> bool:
        if parent is not None and self.parent_based:
            return parent.sampled
        if self.ratio >= 1.0:
            return True
        return (trace_id & _LOW_64) < int(self.ratio * (1 << 64))


def sampler_from(environ: Mapping[str, str]) -> Sampler:
    name = environ.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
    if name not in SAMPLERS:
        raise TelemetryConfigError(f"OTEL_TRACES_SAMPLER: {name!r} is not one of {', '.join(SAMPLERS)}")
    parent_based = name.startswith("parentbased_")
    root = name.removeprefix("parentbased_")
    if root == "always_on":
        return Sampler(1.0, parent_based)
    if root == "always_off":
        return Sampler(0.0, parent_based)
    raw = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip() or "1.0"
    try:
        ratio = float(raw)
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        raise TelemetryConfigError(f"OTEL_TRACES_SAMPLER_ARG: a ratio from 0 to 1 is needed, got {raw!r}")
    return Sampler(ratio, parent_based)
