"""Side-by-side throughput of one trivial `tools/call`, served five ways.

Each server runs alone under uvicorn (httptools + uvloop, one process) pinned to
CPU 0; wrk drives it from CPU 1 over loopback with 64 connections. Scenarios are
interleaved round by round so that machine noise hits all of them alike; the
table reports medians across rounds and each scenario's ratio to the raw echo.

    python -m bench.protocol_bench [--rounds 3] [--duration 10] [--connections 64]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "wrk", "version": "1"},
}
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "wrk"}}}


@dataclass
class Scenario:
    label: str
    app: str
    era: str  # "modern" or "session"
    rps: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)


SCENARIOS = [
    Scenario("raw ASGI JSON-RPC echo", "bench.apps:raw_echo", "modern"),
    Scenario("apimcp engine, 2026-07-28 stateless", "bench.apps:engine", "modern"),
    Scenario("apimcp engine, 2025-11-25 session", "bench.apps:engine", "session"),
    Scenario("mcp SDK low-level server, 2026-07-28", "bench.apps:sdk", "modern"),
    Scenario("mcp SDK low-level server, 2025-11-25 session", "bench.apps:sdk", "session"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _post(url: str, body: dict[str, object], headers: dict[str, str]) -> tuple[dict[str, str], dict[str, object]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
        return dict(response.headers), json.loads(raw) if raw else {}


def _prepare(scenario: Scenario, url: str) -> tuple[dict[str, object], dict[str, str]]:
    """The request wrk will repeat, checked once to answer a real tool result."""
    if scenario.era == "modern":
        body = json.loads(json.dumps(CALL))
        body["params"]["_meta"] = MODERN_META
        headers = dict(MODERN_HEADERS)
    else:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "wrk", "version": "1"},
            },
        }
        response_headers, _ = _post(url, init, {})
        session = {k.lower(): v for k, v in response_headers.items()}["mcp-session-id"]
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        body = CALL
    _, answer = _post(url, body, headers)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("content", [{}])[0].get("text") != "Hello, wrk!":  # type: ignore[union-attr]
        raise SystemExit(f"{scenario.label}: unexpected answer {answer}")
    return body, headers


def _lua(body: dict[str, object], headers: dict[str, str], directory: Path) -> Path:
    """A wrk script sending `body` with a fresh JSON-RPC id per request (servers may match on ids)."""
    template = json.dumps({**body, "id": 999_999_999})
    prefix, suffix = template.split("999999999")
    all_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers}
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
    ]
    path = directory / "request.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


_LATENCY = re.compile(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", re.MULTILINE)
_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _run_wrk(url: str, script: Path, duration: int, connections: int) -> tuple[float, float, float]:
    command = [
        "taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script), url,
    ]  # fmt: skip
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    if "Non-2xx or 3xx responses" in output or "Socket errors" in output:
        raise SystemExit(f"wrk saw failed requests; figures would not be honest:\n{output}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    latency = {m.group(1): float(m.group(2)) * _UNIT[m.group(3)] for m in _LATENCY.finditer(output)}
    return rps, latency["50"], latency["99"]


def _serve(app: str, port: int) -> subprocess.Popen[bytes]:
    command = [
        "taskset", "-c", "0", sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1", f"--port={port}",
        "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{app} did not start")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:  # the SDK's server waits on its sessions; don't wait with it
        process.kill()
        process.wait(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per scenario and round")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unrecorded load before each run")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is required (Debian: apt-get install wrk util-linux)")
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("two CPUs are needed: one for the server, one for wrk")

    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(1, args.rounds + 1):
            for scenario in SCENARIOS:
                port = _free_port()
                server = _serve(scenario.app, port)
                try:
                    url = f"http://127.0.0.1:{port}/mcp"
                    body, headers = _prepare(scenario, url)
                    script = _lua(body, headers, Path(tmp))
                    if args.warmup:
                        _run_wrk(url, script, args.warmup, args.connections)
                    rps, p50, p99 = _run_wrk(url, script, args.duration, args.connections)
                finally:
                    _stop(server)
                scenario.rps.append(rps)
                scenario.p50.append(p50)
                scenario.p99.append(p99)
                print(f"round {round_number}: {scenario.label}: {rps:,.0f} req/s", file=sys.stderr)

    baseline = statistics.median(SCENARIOS[0].rps)
    sdk_modern = statistics.median(SCENARIOS[3].rps)
    print(f"\ntools/call, {args.connections} connections, {args.rounds} rounds x {args.duration}s, medians")
    print(f"{'server':<48} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs echo':>8} {'vs SDK':>7}")
    for scenario in SCENARIOS:
        rps = statistics.median(scenario.rps)
        print(
            f"{scenario.label:<48} {rps:>9,.0f} {statistics.median(scenario.p50):>8.2f} "
            f"{statistics.median(scenario.p99):>8.2f} {rps / baseline:>8.0%} {rps / sdk_modern:>6.1f}x"
        )


if __name__ == "__main__":
    main()
