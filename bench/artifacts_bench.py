"""Custom tools and output filters through the gateway, side by side with the plain tool they build on.

One `apimcp serve` (CPU 0) serves `bench/item_api.yaml` as four services, each its own exposition:

- `plain`: the operation's tool `get_item`, no artifacts: the baseline;
- `custom`: a declarative custom tool `item` (`{id}` -> `get_item {itemId: id}`);
- `shaped`: `get_item` with an output filter, `jsonRetain: [/id, /name]`;
- `slow`: a scripted custom tool `fan_out`, five `rs.callToolAsync` of `get_item` then `rs.awaitPromises`.

The artifacts are bench/artifacts/*.yaml. The first three services call nginx serving the small JSON
item; `slow` calls bench/slow_backend.py, which answers after 50 ms. nginx, the slow backend, wrk and
the scripted callers (bench/script_callers.py) run on CPU 1.

1. `tools/call` throughput of `get_item`, `item` and the filtered `get_item`, 64 connections, both eras;
   each custom row is also given as a same-round ratio to the plain tool, in requests/s and in the
   gateway's CPU time per call (read from /proc; with the gateway saturated it mirrors requests/s, and
   shows whether a slow run was a slower machine or stolen time).
2. The scripted fan-out: (a) the latency of one `fan_out` call (one client, sequential calls);
   (b) the plain tool's throughput (wrk, 64 connections, 2026-07-28) alone, and while 10 clients in
   another process call `fan_out` in a loop.

    python -m bench.artifacts_bench [--rounds 3] [--duration 5] [--profile FILE]

`--profile FILE` runs the gateway under cProfile and writes its main thread's statistics to FILE
(the figures are then slower than without it; the script worker threads are not profiled).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import harness, script_callers
from bench.gateway_bench import ITEM_SPEC, start_nginx
from bench.harness import Scenario

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
ITEM = {"id": 1, "name": "widget", "price": 9.5}
RETAINED = {"id": 1, "name": "widget"}
FAN_OUT = {"names": ["widget"] * 5}
MODERN = "2026-07-28 stateless"
SESSION = "2025-11-25 session"


@dataclass(frozen=True)
class Tool:
    """One tool of one exposition, the arguments it is called with and the structured content it answers."""

    service: str
    name: str
    arguments: dict[str, Any]
    answer: dict[str, Any]
    label: str


PLAIN = Tool("plain", "get_item", {"itemId": 1}, ITEM, "plain get_item")
DECLARATIVE = Tool("custom", "item", {"id": 1}, ITEM, "declarative item -> get_item")
FILTERED = Tool("shaped", "get_item", {"itemId": 1}, RETAINED, "filtered get_item (jsonRetain)")
SCRIPTED = Tool("slow", "fan_out", {"id": 1}, FAN_OUT, "scripted fan_out (5 x 50 ms calls)")


@dataclass
class CallerRuns(Scenario):
    """What the scripted callers measured, one entry per round (`rps`: their calls per second)."""

    calls: int = 0
    errors: int = 0

    def record_summary(self, summary: dict[str, Any]) -> None:
        self.record(summary["calls"] / summary["seconds"], summary["p50"], summary["p99"])
        self.calls += summary["calls"]
        self.errors += summary["errors"]


def write_config(directory: Path, nginx: str, slow: str) -> Path:
    def service(name: str, backend: str, artifact: str | None) -> str:
        listed = f", artifacts: [{ARTIFACTS / artifact}]" if artifact else ""
        return f'  {name}: {{openapi: {ITEM_SPEC}, name: {name}, version: "1", backend: "{backend}"{listed}}}\n'

    config = directory / "artifacts-gateway.yaml"
    config.write_text(
        "services:\n"
        + service("plain", nginx, None)
        + service("custom", nginx, "custom-tools.yaml")
        + service("shaped", nginx, "output-filters.yaml")
        + service("slow", slow, "fan-out.yaml")
    )
    return config


def start_gateway(config: Path, port: int, connections: int, profile: Path | None) -> subprocess.Popen[bytes]:
    python = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else [])]
    command = [*python, "-m", "apimcp.cli", "serve", str(config), "--port", str(port)]
    # wrk's connections all share one session in the 2025-11-25 era (32 requests at once by default)
    env = {**os.environ, "APIMCP_MCP_MAX_REQUESTS_PER_SESSION": str(max(32, connections))}
    process = subprocess.Popen(
        ["taskset", "-c", "0", *command], cwd=harness.ROOT, stdout=subprocess.DEVNULL, env=env
    )  # keep the tables readable
    harness.wait_for_port(port, process, "apimcp serve")
    return process


def request(url: str, tool: Tool, era: str) -> tuple[dict[str, object], dict[str, str]]:
    call: dict[str, object] = {"name": tool.name, "arguments": tool.arguments}
    if era == SESSION:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, harness.open_session(url)
    return harness.modern_request("tools/call", call, name=tool.name)


def check(url: str, tool: Tool, body: dict[str, object], headers: dict[str, str]) -> None:
    """Stop unless the tool answers exactly what it should (a filter that failed open would not)."""
    _, answer = harness.post(url, body, headers)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("isError") or result.get("structuredContent") != tool.answer:
        raise SystemExit(f"{tool.label}: unexpected answer {answer}")


def checked_script(body: dict[str, object], headers: dict[str, str], directory: Path) -> tuple[Path, Path]:
    """harness's wrk script, plus a count of answers that are not `"isError":false` (a failed backend
    call is an error result in a 200 response, which wrk alone would count as a success)."""
    script = harness.lua_script(body, headers, directory)
    counts = script.with_suffix(".counts")
    lines = [
        "bad = 0",
        "total = 0",
        "response = function(status, headers, body)",
        "  total = total + 1",
        "  if not string.find(body, '\"isError\":false', 1, true) then bad = bad + 1 end",
        "end",
        "local threads = {}",
        "setup = function(thread) table.insert(threads, thread) end",
        "done = function(summary, latency, requests)",
        "  local b, t = 0, 0",
        '  for _, thread in ipairs(threads) do b = b + thread:get("bad"); t = t + thread:get("total") end',
        f"  local file = io.open({json.dumps(str(counts))}, 'w')",
        "  file:write(b .. ' ' .. t)",
        "  file:close()",
        "end",
    ]
    with script.open("a") as file:
        file.write("\n".join(lines) + "\n")
    return script, counts


def run_wrk(url: str, scripts: tuple[Path, Path], duration: int, connections: int) -> tuple[float, float, float]:
    """harness.run_wrk, also stopping the benchmark on any tool error result."""
    script, counts = scripts
    counts.unlink(missing_ok=True)
    figures = harness.run_wrk(url, script, duration, connections)
    bad, total = (int(n) for n in counts.read_text().split())
    if bad or not total:
        raise SystemExit(f"{bad} of {total} answers were not successful tool results; figures would not be honest")
    return figures


def start_callers(url: str, tool: Tool, callers: int, duration: float) -> subprocess.Popen[str]:
    given = ["--tool", tool.name, "--arguments", json.dumps(tool.arguments), "--expect", '"names":["widget"']
    return script_callers.start(url, given, callers, duration, "the scripted callers")


def callers_summary(process: subprocess.Popen[str]) -> dict[str, Any]:
    return script_callers.summary(process, "the scripted callers")


def same_round_ratio(scenario: Scenario, baseline: Scenario) -> float:
    return statistics.median(a / b for a, b in zip(scenario.rps, baseline.rps, strict=True))


@dataclass
class Measured(Scenario):
    """A wrk scenario, with the gateway's CPU time (user + system) per request in each run.

    The gateway is saturated, so CPU per request times requests/s is about one second per second
    when the gateway had CPU 0 to itself: a run slowed by a slower machine costs more CPU per
    request, one slowed by other processes taking CPU 0 does not.
    """

    cpu_us: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Gateway:
    base: str
    pid: int

    def url(self, tool: Tool) -> str:
        return f"{self.base}/mcp/{tool.service}"

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def measure(
    gateway: Gateway, url: str, scripts: tuple[Path, Path], scenario: Measured, args: argparse.Namespace
) -> float:
    """One warm-up and one measured wrk run; records the scenario and returns the gateway's CPU seconds."""
    run_wrk(url, scripts, args.warmup, args.connections)
    before = gateway.cpu_seconds()
    rps, p50, p99 = run_wrk(url, scripts, args.duration, args.connections)
    cpu = gateway.cpu_seconds() - before
    scenario.record(rps, p50, p99)
    scenario.cpu_us.append(cpu / (rps * args.duration) * 1e6)
    return cpu


def shaping_throughput(args: argparse.Namespace, gateway: Gateway, tmp: Path) -> dict[str, list[Measured]]:
    """Part 1: plain, declarative and filtered `tools/call`, both eras, interleaved in every round
    (the tools' order turns from one round to the next, so that none always runs first)."""
    tools = (PLAIN, DECLARATIVE, FILTERED)
    scenarios = {era: [Measured(f"{tool.label}, {era}") for tool in tools] for era in (MODERN, SESSION)}
    for round_number in range(1, args.rounds + 1):
        turn = (round_number - 1) % len(tools)
        for era, row in scenarios.items():
            pairs = list(zip(tools, row, strict=True))
            for tool, scenario in pairs[turn:] + pairs[:turn]:
                url = gateway.url(tool)
                body, headers = request(url, tool, era)
                check(url, tool, body, headers)
                measure(gateway, url, checked_script(body, headers, tmp), scenario, args)
                print(
                    f"round {round_number}: {scenario.label}: {scenario.rps[-1]:,.0f} req/s, "
                    f"{scenario.cpu_us[-1]:.0f} us CPU per call",
                    file=sys.stderr,
                )
    return scenarios


@dataclass
class FanOut:
    """Part 2's figures."""

    sequential: CallerRuns
    alone: Measured
    loaded: Measured
    beside: CallerRuns
    cpu_ms: list[float] = field(default_factory=list)
    """The gateway's CPU per scripted call, estimated: the loaded run's CPU less its plain requests' share."""


def fan_out(args: argparse.Namespace, gateway: Gateway, tmp: Path) -> FanOut:
    """Part 2: one scripted call's latency; the plain tool alone and beside scripted callers."""
    figures = FanOut(
        CallerRuns(f"{SCRIPTED.name}, one client, sequential calls"),
        Measured(f"{PLAIN.label} alone, 2026-07-28"),
        Measured(f"{PLAIN.label} + {args.callers} {SCRIPTED.name} callers, 2026-07-28"),
        CallerRuns(f"{SCRIPTED.name}, {args.callers} callers beside wrk"),
    )
    plain_url, slow_url = gateway.url(PLAIN), gateway.url(SCRIPTED)
    body, headers = request(slow_url, SCRIPTED, MODERN)
    check(slow_url, SCRIPTED, body, headers)
    body, headers = request(plain_url, PLAIN, MODERN)
    check(plain_url, PLAIN, body, headers)
    scripts = checked_script(body, headers, tmp)
    for round_number in range(1, args.rounds + 1):
        sequential, alone, loaded, beside = figures.sequential, figures.alone, figures.loaded, figures.beside
        sequential.record_summary(callers_summary(start_callers(slow_url, SCRIPTED, 1, args.duration)))
        print(f"round {round_number}: {sequential.label}: p50 {sequential.p50[-1]:.1f} ms", file=sys.stderr)

        measure(gateway, plain_url, scripts, alone, args)
        print(f"round {round_number}: {alone.label}: {alone.rps[-1]:,.0f} req/s", file=sys.stderr)

        callers = start_callers(slow_url, SCRIPTED, args.callers, 0)
        try:
            cpu = measure(gateway, plain_url, scripts, loaded, args)
        finally:
            callers.terminate()
        beside.record_summary(callers_summary(callers))
        plain_share = loaded.rps[-1] * args.duration * alone.cpu_us[-1] / 1e6
        figures.cpu_ms.append((cpu - plain_share) / (beside.rps[-1] * args.duration) * 1000)
        print(
            f"round {round_number}: {loaded.label}: {loaded.rps[-1]:,.0f} req/s "
            f"({beside.rps[-1]:,.0f} {SCRIPTED.name} calls/s, ~{figures.cpu_ms[-1]:.1f} ms CPU each)",
            file=sys.stderr,
        )
    return figures


def print_cpu(title: str, rows: Sequence[Measured], baseline: Measured) -> None:
    print(f"\n{title}")
    print(f"{'server':<52} {'CPU us/call':>12} {'vs ' + baseline.label.split(',')[0][:14]:>18}")
    for row in rows:
        ratio = statistics.median(a / b for a, b in zip(row.cpu_us, baseline.cpu_us, strict=True))
        print(f"{row.label:<52} {statistics.median(row.cpu_us):>12.0f} {ratio:>18.0%}")


def print_callers(title: str, rows: Sequence[CallerRuns]) -> None:
    print(f"\n{title}")
    print(f"{'scripted calls':<52} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'calls':>8} {'errors':>7}")
    for row in rows:
        print(
            f"{row.label:<52} {statistics.median(row.rps):>9,.1f} {statistics.median(row.p50):>8.2f} "
            f"{statistics.median(row.p99):>8.2f} {row.calls:>8,} {row.errors:>7}"
        )


def print_goals(scenarios: dict[str, list[Measured]], figures: FanOut) -> None:
    goals = [(f"{row[1].label}: >= 90% of plain", same_round_ratio(row[1], row[0]), 0.9) for row in scenarios.values()]
    goals += [(f"{row[2].label}: >= 90% of plain", same_round_ratio(row[2], row[0]), 0.9) for row in scenarios.values()]
    goals.append((f"{figures.loaded.label}: >= 80% of alone", same_round_ratio(figures.loaded, figures.alone), 0.8))
    print("\ngoals (same-round ratios of req/s, medians)")
    for label, value, floor in goals:
        print(f"{label:<78} {value:>7.1%}  {'holds' if value >= floor else 'DOES NOT HOLD'}")
    p50, p99 = statistics.median(figures.sequential.p50), statistics.median(figures.sequential.p99)
    verdict = "holds" if p99 <= 80 else "holds at p50 only" if p50 <= 80 else "DOES NOT HOLD"
    print(f"{figures.sequential.label + ': <= 80 ms per call':<78} p50 {p50:.1f} ms, p99 {p99:.1f} ms  {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--callers", type=int, default=10, help="concurrent clients calling the scripted tool")
    parser.add_argument("--profile", type=Path, help="run the gateway under cProfile, statistics to this file")
    args = parser.parse_args()
    harness.require_tools("nginx")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        slow_port = harness.free_port()
        slow = harness.start_pinned(1, [sys.executable, "-m", "bench.slow_backend", f"--port={slow_port}"],
                                    slow_port, "slow backend")  # fmt: skip
        port = harness.free_port()
        config = write_config(tmp, f"http://127.0.0.1:{nginx_port}", f"http://127.0.0.1:{slow_port}")
        profile = args.profile.resolve() if args.profile else None
        process = start_gateway(config, port, args.connections, profile)
        gateway = Gateway(f"http://127.0.0.1:{port}", process.pid)
        try:
            scenarios = shaping_throughput(args, gateway, tmp)
            figures = fan_out(args, gateway, tmp)
        finally:
            if profile is not None:  # uvicorn re-raises SIGTERM after its shutdown, before cProfile writes
                process.send_signal(signal.SIGINT)
                process.wait(10)
            for server in (process, slow, nginx):
                harness.stop(server)
    for era, row in scenarios.items():
        title = f"tools/call, {era}, {args.connections} connections, {args.rounds} x {args.duration}s, medians"
        harness.print_table(title, row, row[0])
        print_cpu(f"the gateway's CPU time per tools/call, {era}, medians", row, row[0])
    harness.print_table(
        f"the plain tool beside scripted callers, {args.connections} connections, {args.rounds} x {args.duration}s",
        [figures.alone, figures.loaded],
        figures.alone,
    )
    print_callers(
        f"{SCRIPTED.label}, {args.rounds} x {args.duration}s, medians of rounds", [figures.sequential, figures.beside]
    )
    print(
        f"the gateway's CPU per {SCRIPTED.name} call beside wrk (estimated): "
        f"{statistics.median(figures.cpu_ms):.1f} ms; per plain call alone: "
        f"{statistics.median(figures.alone.cpu_us) / 1000:.2f} ms"
    )
    print_goals(scenarios, figures)


if __name__ == "__main__":
    main()
