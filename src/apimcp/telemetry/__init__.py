"""Telemetry: OpenTelemetry spans and Prometheus metrics, plugged in at seams (docs/telemetry.md).

- `config.py`: when telemetry is on, read once from the environment (`OTEL_*`, `APIMCP_METRICS*`)
- `active.py`: the process's `Telemetry` (off unless installed), built from a config
- `tracing.py`: where spans are made, sampled and sent
- `spans.py`, `trace_context.py`, `sampling.py`: span records; W3C `traceparent`/`tracestate`; samplers
- `otlp_encoding.py`, `export.py`, `environment.py`: OTLP protobuf; the batching export thread; `OTEL_*` settings
- `labels.py`: bounded label and attribute values
- `server_spans.py`: a SERVER span per MCP request, open while the handler runs
- `metrics.py`: the Prometheus registry and every metric
- `observer.py`: an exposition's request observer (spans and metrics), chained with audit
- `backend_calls.py`: a CLIENT span and a latency figure per backend call, trace context passed on
- `gauges.py`: figures read when scraped (sessions, streams, snapshot revision, sync lag)
- `scrape.py`: `/metrics`, behind an optional token
- `control_plane.py`: the control plane's requests by route template and status
"""

from apimcp.telemetry.active import OFF, Telemetry, flush, install, installed

__all__ = ["OFF", "Telemetry", "flush", "install", "installed"]
