"""Side-by-side throughput of one trivial `tools/call`, served five ways.

Each server runs alone under uvicorn (httptools + uvloop, one process) pinned to
CPU 0; wrk drives it from CPU 1 over loopback with 64 connections. Scenarios are
interleaved round by round so that machine noise hits all of them alike; the
table reports medians across rounds and each scenario's ratio to the raw echo
and to the official SDK's 2026-07-28 server.

    python -m bench.protocol_bench [--rounds 3] [--duration 10] [--connections 64] [--baseline DIR]

`--baseline DIR` also serves the engine from another checkout (with its own `.venv`, e.g. a
worktree of the main branch before a change) in the same rounds, and reports this checkout's
engine against it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench import harness
from bench.harness import THIS, Checkout, Scenario

CALL = {"name": "greet", "arguments": {"name": "wrk"}}

SCENARIOS = [
    (Scenario("raw ASGI JSON-RPC echo"), "bench.apps:raw_echo", "modern", THIS),
    (Scenario("apimcp engine, 2026-07-28 stateless"), "bench.apps:engine", "modern", THIS),
    (Scenario("apimcp engine, 2025-11-25 session"), "bench.apps:engine", "session", THIS),
    (Scenario("mcp SDK low-level server, 2026-07-28"), "bench.apps:sdk", "modern", THIS),
    (Scenario("mcp SDK low-level server, 2025-11-25 session"), "bench.apps:sdk", "session", THIS),
]


def prepare(url: str, era: str) -> tuple[dict[str, object], dict[str, str]]:
    """The request wrk will repeat, checked once to answer a real tool result."""
    if era == "modern":
        body, headers = harness.modern_request("tools/call", CALL, name="greet")
    else:
        headers = harness.open_session(url)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": CALL}
    _, answer = harness.post(url, body, headers)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("content", [{}])[0].get("text") != "Hello, wrk!":
        raise SystemExit(f"unexpected answer {answer}")
    return body, headers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per scenario and round")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unrecorded load before each run")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--baseline", type=Path, help="another checkout whose engine is measured beside this one")
    args = parser.parse_args()
    harness.require_tools()
    scenarios = list(SCENARIOS)
    if args.baseline is not None:
        baseline = Checkout.at(args.baseline)
        scenarios += [
            (Scenario(f"baseline: {scenario.label}"), app, era, baseline)
            for scenario, app, era, _ in SCENARIOS
            if app == "bench.apps:engine"
        ]
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(1, args.rounds + 1):
            for scenario, app, era, checkout in scenarios:
                port = harness.free_port()
                command = harness.uvicorn_command(app, port, checkout)
                server = harness.start_pinned(0, command, port, app, checkout)
                try:
                    url = f"http://127.0.0.1:{port}/mcp"
                    script = harness.lua_script(*prepare(url, era), Path(tmp))
                    harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
                finally:
                    harness.stop(server)
                print(f"round {round_number}: {scenario.label}: {scenario.rps[-1]:,.0f} req/s", file=sys.stderr)
    measured = [s for s, _, _, _ in scenarios]
    title = f"tools/call, {args.connections} connections, {args.rounds} rounds x {args.duration}s, medians"
    harness.print_table(title, measured, measured[0], measured[3])
    if args.baseline is not None:
        pairs = [(this, other) for other in measured[5:] for this in measured[1:3] if other.label.endswith(this.label)]
        harness.print_comparison(f"this checkout against {args.baseline}", pairs)


if __name__ == "__main__":
    main()
