"""What telemetry costs a gateway: `tools/call` with telemetry off, metrics only, spans only, and both, side by
side in interleaved rounds (goal: both on keep at least 85% of the throughput off).

nginx (CPU 1) serves a small JSON item; `apimcp serve` (CPU 0) calls it for every request; wrk (CPU 1) drives it
with 64 connections, 2026-07-28 stateless requests. "Spans" exports every request's SERVER span and its
backend CLIENT span over OTLP/HTTP (apimcp's batching exporter, its defaults) to a local receiver
(bench/otlp_sink.py, CPU 1) that decodes them; "metrics" has /metrics scraped every second meanwhile, each
scrape parsed with prometheus_client's parser. Every request is traced, except in the last mode, which samples
10% of traces with OpenTelemetry's standard sampler variables.

    python -m bench.telemetry_bench [--rounds 5] [--duration 10]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from bench import harness
from bench.gateway_bench import ITEM_SPEC, apimcp_serve, check_item, start_nginx
from bench.harness import Scenario

MODES = {
    "telemetry off": {},
    "metrics on (/metrics scraped every second)": {"APIMCP_METRICS": "on"},
    "spans on (OTLP/HTTP to a local receiver)": {"OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}"},
    "spans and metrics on": {"OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}", "APIMCP_METRICS": "on"},
    "spans (10% of traces sampled) and metrics on": {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "{sink}",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
        "APIMCP_METRICS": "on",
    },
}


class Scraper(threading.Thread):
    """GET /metrics every second, as Prometheus would (more often than its usual 15 s), until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.scrapes = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(1.0):
            with urllib.request.urlopen(self.url, timeout=10) as response:
                families = list(text_string_to_metric_families(response.read().decode()))
            if not any(family.name == "apimcp_mcp_requests" for family in families):
                raise SystemExit(f"{self.url} shows no request counter")
            self.scrapes += 1


def spans_received(sink: str) -> int:
    with urllib.request.urlopen(f"{sink}/count", timeout=10) as response:
        return int(json.load(response)["spans"])


def run(args: argparse.Namespace, tmp: Path, backend: str, sink: str) -> list[Scenario]:
    scenarios = {label: Scenario(label) for label in MODES}
    config = tmp / "gateway.yaml"
    config.write_text(f"services:\n  items:\n    openapi: {ITEM_SPEC}\n    backend: {backend}\n")
    call = {"name": "get_item", "arguments": {"itemId": 1}}
    for round_number in range(1, args.rounds + 1):
        for label, variables in MODES.items():
            env = {name: value.format(sink=sink) for name, value in variables.items()}
            port = harness.free_port()
            server = apimcp_serve([str(config)], port, connections=args.connections, env=env)
            url = f"http://127.0.0.1:{port}/mcp/items"
            scraper = Scraper(f"http://127.0.0.1:{port}/metrics") if "APIMCP_METRICS" in env else None
            try:
                body, headers = harness.modern_request("tools/call", call, name="get_item")
                check_item(url, body, headers)
                script = harness.lua_script(body, headers, tmp)
                harness.run_wrk(url, script, args.warmup, args.connections)
                spans_before = spans_received(sink)
                if scraper is not None:
                    scraper.start()
                scenarios[label].record(*harness.run_wrk(url, script, args.duration, args.connections))
            finally:
                if scraper is not None:
                    scraper.stopped.set()
                harness.stop(server)
            note = ""
            if "OTEL_EXPORTER_OTLP_ENDPOINT" in env:
                requests = scenarios[label].rps[-1] * args.duration
                note += f", {spans_received(sink) - spans_before:,} spans received for ~{requests:,.0f} requests"
            if scraper is not None:
                note += f", {scraper.scrapes} scrapes"
            print(f"round {round_number}: {label}: {scenarios[label].rps[-1]:,.0f} req/s{note}", file=sys.stderr)
    return list(scenarios.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    harness.require_tools("nginx")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for name in [name for name in os.environ if name.startswith(("OTEL_", "APIMCP_METRICS"))]:
        del os.environ[name]  # each mode says exactly what it turns on
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        sink_port = harness.free_port()
        sink = harness.start_pinned(1, [sys.executable, "-m", "bench.otlp_sink", str(sink_port)], sink_port, "sink")
        try:
            scenarios = run(args, tmp, f"http://127.0.0.1:{nginx_port}", f"http://127.0.0.1:{sink_port}")
        finally:
            harness.stop(sink)
            harness.stop(nginx)
    title = f"tools/call with and without telemetry, {args.connections} connections, {args.rounds} x {args.duration}s"
    harness.print_table(title, scenarios, scenarios[0])


if __name__ == "__main__":
    main()
