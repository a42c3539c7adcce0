"""An MCP server's trivial tool called directly, and through the gateway that fronts it, side by side.

The upstream is apimcp's engine serving one tool (`bench.apps`), speaking both eras (the gateway then calls it
statelessly) or the session era only (the gateway holds a session with it). Directly, the upstream runs pinned
to CPU 0 and wrk to CPU 1. Through the gateway, `apimcp serve` (a configuration with `mcp:`) runs on CPU 0 and
the upstream shares CPU 1 with wrk: the gateway's own cost is on its core, as the upstream's is directly. Each
client era is measured from each upstream era (the four bridging directions). Scenarios are interleaved round by
round; ratios are medians of same-round ratios to the direct call of the same upstream and client era.

    python -m bench.federation_bench [--rounds 3] [--duration 10] [--connections 1,64]

1 connection shows what the gateway adds to a call's latency at low load (p50), 64 its throughput.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench import harness
from bench.gateway_bench import apimcp_serve
from bench.harness import Scenario
from bench.protocol_bench import prepare

UPSTREAMS = {
    "both eras (called statelessly)": "bench.apps:engine",
    "session era only": "bench.apps:engine_session_only",
}
CLIENTS = ("modern", "session")


def measure(url: str, era: str, scenario: Scenario, tmp: Path, args: argparse.Namespace, connections: int) -> None:
    script = harness.lua_script(*prepare(url, era), tmp)  # the same call and check as the engine bench
    harness.load(scenario, url, script, args.warmup, args.duration, connections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per scenario and round")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unrecorded load before each run")
    parser.add_argument("--connections", default="1,64", help="comma-separated connection counts")
    args = parser.parse_args()
    harness.require_tools()
    counts = [int(c) for c in args.connections.split(",")]
    directs = {(upstream, n): Scenario(f"direct, upstream {upstream}") for upstream in UPSTREAMS for n in counts}
    vias = {
        (upstream, era, n): Scenario(f"gateway, {era} client, upstream {upstream}")
        for upstream in UPSTREAMS
        for era in CLIENTS
        for n in counts
    }
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for _ in range(args.rounds):
            for upstream, app in UPSTREAMS.items():
                own_era = "session" if app.endswith("session_only") else "modern"
                for cpu, through in ((0, False), (1, True)):
                    port = harness.free_port()
                    server = harness.start_pinned(cpu, harness.uvicorn_command(app, port), port, app)
                    gateway = None
                    try:
                        url = f"http://127.0.0.1:{port}/mcp"
                        if not through:
                            for n in counts:
                                measure(url, own_era, directs[upstream, n], tmp, args, n)
                            continue
                        config = tmp / "gateway.yaml"
                        config.write_text(
                            f"services:\n  up:\n    mcp: {url}\n"
                            "expositions:\n  up:\n    services: [up]\n"
                            "server: {fetch_allow: [127.0.0.1]}\n"
                        )
                        gateway_port = harness.free_port()
                        gateway = apimcp_serve([str(config)], gateway_port, connections=max(counts))
                        for era in CLIENTS:
                            for n in counts:
                                measure(
                                    f"http://127.0.0.1:{gateway_port}/mcp/up", era, vias[upstream, era, n], tmp, args, n
                                )
                    finally:
                        if gateway is not None:
                            harness.stop(gateway)
                        harness.stop(server)
    for n in counts:
        print(f"\n{n} connection{'s' if n > 1 else ''}: each row against the upstream called directly in its own era")
        print(f"{'client era / upstream':<52} {'direct req/s':>12} {'gateway':>9} {'ratio':>7} {'p50 +ms':>8}")
        for (upstream, era, count), via in vias.items():
            if count != n:
                continue
            direct = directs[upstream, n]
            ratio = statistics.median(v / d for v, d in zip(via.rps, direct.rps, strict=True))
            added = statistics.median(v - d for v, d in zip(via.p50, direct.p50, strict=True))
            label = f"{era} client, upstream {upstream}"
            print(
                f"{label:<52} {statistics.median(direct.rps):>12,.0f} {statistics.median(via.rps):>9,.0f} "
                f"{ratio:>7.0%} {added:>8.2f}"
            )


if __name__ == "__main__":
    main()
