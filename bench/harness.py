"""What every HTTP benchmark here shares: processes pinned to CPUs, wrk runs, MCP requests, tables.

Servers run pinned to CPU 0; wrk (and any backend) to CPU 1. Figures are medians over
interleaved rounds and are reported as ratios to a baseline measured in the same run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "wrk", "version": "1"},
}
ACCEPT = "application/json, text/event-stream"


@dataclass(frozen=True)
class Checkout:
    """Where a server's code comes from: this checkout, or another one (with its own `.venv`) measured
    beside it in the same rounds, e.g. the main branch before a change."""

    root: Path
    python: str

    @classmethod
    def at(cls, path: Path) -> Checkout:
        python = path.resolve() / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"{path} has no .venv/bin/python (run scripts/setup.sh there first)")
        return cls(path.resolve(), str(python))


THIS = Checkout(ROOT, sys.executable)


@dataclass
class Scenario:
    label: str
    rps: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)

    def record(self, rps: float, p50: float, p99: float) -> None:
        self.rps.append(rps)
        self.p50.append(p50)
        self.p99.append(p99)


def require_tools(*tools: str) -> None:
    for tool in ("wrk", "taskset", *tools):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is required (Debian: apt-get install wrk util-linux nginx-light)")
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("two CPUs are needed: one for the server, one for wrk")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{what} did not start")


def start_pinned(
    cpu: int, command: Sequence[str], port: int, what: str, checkout: Checkout = THIS
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["taskset", "-c", str(cpu), *command], cwd=checkout.root)
    wait_for_port(port, process, what)
    return process


def uvicorn_command(app: str, port: int, checkout: Checkout = THIS) -> list[str]:
    return [
        checkout.python, "-m", "uvicorn", app, "--host", "127.0.0.1", f"--port={port}",
        "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:  # some servers wait on open sessions; don't wait with them
        process.kill()
        process.wait(5)


def post(url: str, body: dict[str, object], headers: dict[str, str]) -> tuple[dict[str, str], dict[str, object]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
        return {k.lower(): v for k, v in response.headers.items()}, json.loads(raw) if raw else {}


def modern_request(
    method: str, params: dict[str, object], name: str | None = None
) -> tuple[dict[str, object], dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": MODERN_META}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return body, headers


def open_session(url: str, version: str = "2025-11-25", extra: dict[str, str] | None = None) -> dict[str, str]:
    """Initialize a session (sending `extra` headers, a token say) and return the headers later requests carry."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "wrk", "version": "1"}},
    }
    response_headers, _ = post(url, init, extra or {})
    headers = {"Mcp-Session-Id": response_headers["mcp-session-id"], "MCP-Protocol-Version": version}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**(extra or {}), **headers})
    return headers


_ANSWER_CHECK = [
    "local threads = {}",
    "function setup(thread) table.insert(threads, thread) end",
    "failed = 0",
    "function response(status, headers, body)",
    "  if not string.find(body, '\"result\"', 1, true) or string.find(body, '\"isError\":true', 1, true) then",
    "    failed = failed + 1",
    "  end",
    "end",
    "function done(summary, latency, requests)",
    "  local total = 0",
    '  for _, thread in ipairs(threads) do total = total + thread:get("failed") end',
    '  io.write("answers without a result: " .. total .. "\\n")',
    "end",
]
"""Lua that reads every answer and counts those that are a JSON-RPC error or a tool error: wrk sees only HTTP
statuses, and a server refusing work quickly (200, with an error in the body) would look fast."""


def lua_script(
    body: dict[str, object], headers: dict[str, str], directory: Path, *, check_answers: bool = False
) -> Path:
    """A wrk script sending `body` with a fresh JSON-RPC id per request (servers may match on ids); with
    `check_answers`, `run_wrk` fails when any answer is not a successful result (reading each costs wrk some CPU)."""
    template = json.dumps({**body, "id": 999_999_999})
    prefix, suffix = template.split("999999999")
    all_headers = {"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    lines = [
        "local counter = 0",
        f"local prefix = {json.dumps(prefix)}",
        f"local suffix = {json.dumps(suffix)}",
        "local headers = {}",
        *(f"headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in all_headers.items()),
        "request = function()",
        "  counter = counter + 1",
        '  return wrk.format("POST", nil, headers, prefix .. counter .. suffix)',
        "end",
        *(_ANSWER_CHECK if check_answers else ()),
    ]
    path = directory / f"request-{abs(hash(template))}-{int(check_answers)}.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


_LATENCY = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def run_wrk(url: str, script: Path, duration: int, connections: int) -> tuple[float, float, float]:
    """Requests/s, p50 and p99 (ms); stops the benchmark on any failed request."""
    command = [
        "taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script), url,
    ]  # fmt: skip
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    if "Non-2xx or 3xx responses" in output or "Socket errors" in output:
        raise SystemExit(f"wrk saw failed requests; figures would not be honest:\n{output}")
    failed = re.search(r"answers without a result: (\d+)", output)
    if failed is not None and int(failed.group(1)):
        raise SystemExit(f"{failed.group(1)} answers were errors, not results; figures would not be honest:\n{output}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    latency = {m.group(1): float(m.group(2)) * _UNIT[m.group(3)] for m in _LATENCY.finditer(output)}
    return rps, latency["50"], latency["99"]


def load(scenario: Scenario, url: str, script: Path, warmup: int, duration: int, connections: int) -> None:
    """`warmup` seconds of load unrecorded (none for 0), then `duration` seconds recorded in `scenario`."""
    if warmup:
        run_wrk(url, script, warmup, connections)
    scenario.record(*run_wrk(url, script, duration, connections))


def print_table(title: str, scenarios: Sequence[Scenario], baseline: Scenario, other: Scenario | None = None) -> None:
    """Medians, and each row's ratio to `baseline` (and `other`): the median of the ratios of runs
    made in the same round, which cancels the drift a noisy machine adds between rounds."""

    def ratio(scenario: Scenario, to: Scenario) -> float:
        return statistics.median(a / b for a, b in zip(scenario.rps, to.rps, strict=True))

    print(f"\n{title}")
    header = f"{'server':<52} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs ' + baseline.label.split(',')[0][:14]:>18}"
    if other is not None:
        header += f" {'vs ' + other.label.split(',')[0][:10]:>14}"
    print(header)
    for scenario in scenarios:
        line = (
            f"{scenario.label:<52} {statistics.median(scenario.rps):>9,.0f} {statistics.median(scenario.p50):>8.2f} "
            f"{statistics.median(scenario.p99):>8.2f} {ratio(scenario, baseline):>18.0%}"
        )
        if other is not None:
            line += f" {ratio(scenario, other):>13.1f}x"
        print(line)


def print_comparison(title: str, pairs: Sequence[tuple[Scenario, Scenario]]) -> None:
    """Each scenario against the same scenario served by the baseline checkout, as same-round ratios."""
    print(f"\n{title}")
    print(f"{'scenario':<52} {'this req/s':>11} {'baseline':>11} {'this/baseline':>14}")
    for this, baseline in pairs:
        ratio = statistics.median(a / b for a, b in zip(this.rps, baseline.rps, strict=True))
        print(
            f"{this.label:<52} {statistics.median(this.rps):>11,.0f} {statistics.median(baseline.rps):>11,.0f} "
            f"{ratio:>14.1%}"
        )
