"""How long a change made with the CLI takes to be served by a running gateway.

    python -m bench.sync_bench [--changes 50] [--mode embedded|separate|both]

For each change, the clock starts before `apimcp plan update` is launched and stops when the
gateway's tools/list shows the change (polled every 2 ms with a 2026-07-28 request). Reported:
p50 / p99 / max of that whole time, of the CLI process alone, and of what follows the CLI's exit
(the propagation: commit, notification, snapshot, rebuild). Changes alternate between excluding
and including one operation of the Bookshelf demo API, so every change alters the tool list.

`embedded` is `apimcp serve` (control plane and gateway in one process); `separate` is
`apimcp control-plane` and `apimcp gateway --control-plane URL` (long polling over HTTP).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import ROOT, free_port, modern_request, post, stop, wait_for_port

APIMCP = [sys.executable, "-m", "apimcp.cli"]


def start(command: list[str], port: int, what: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [*APIMCP, *command], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for_port(port, process, what)
    return process


def cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([*APIMCP, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"apimcp {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def tools(endpoint: str) -> set[str]:
    body, headers = modern_request("tools/list", {})
    try:
        _, reply = post(endpoint, body, headers)
    except OSError:
        return set()
    result = reply.get("result")
    return {tool["name"] for tool in result["tools"]} if isinstance(result, dict) else set()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(mode: str, changes: int, home: Path) -> dict[str, list[float]]:
    env = {**os.environ, "APIMCP_HOME": str(home / "data"), "APIMCP_CONFIG": str(home / "context.json")}
    env.pop("APIMCP_URL", None)
    env.pop("APIMCP_TOKEN", None)
    api_port, plane_port = free_port(), free_port()
    processes = [start(["demo-api", "--port", str(api_port)], api_port, "demo API", env)]
    try:
        if mode == "embedded":
            processes.append(start(["serve", "--port", str(plane_port)], plane_port, "apimcp serve", env))
            gateway_base = f"http://127.0.0.1:{plane_port}"
        else:
            processes.append(start(["control-plane", "--port", str(plane_port)], plane_port, "control plane", env))
            token = (home / "data" / "bootstrap-token").read_text().strip()
            cli(env, "login", f"http://127.0.0.1:{plane_port}", "--token", token)
        backend = f"http://127.0.0.1:{api_port}"
        cli(env, "import", f"{backend}/openapi.yaml", "--name", "books", "--backend", backend, "--expose", "books")
        if mode == "separate":
            gateway_token = json.loads(cli(env, "token", "create", "bench", "--kind", "gateway", "-o", "json"))["token"]
            key_file = home / "gateway-key.pem"
            cli(env, "gateway-key", "create", "bench", "--out", str(key_file))
            gateway_port = free_port()
            plane_url = f"http://127.0.0.1:{plane_port}"
            processes.append(
                start(
                    ["gateway", "--control-plane", plane_url, "--port", str(gateway_port), "--key-file", str(key_file)],
                    gateway_port,
                    "gateway",
                    {**env, "APIMCP_GATEWAY_TOKEN": gateway_token},
                )
            )
            gateway_base = f"http://127.0.0.1:{gateway_port}"
        endpoint = f"{gateway_base}/mcp/default/books"
        deadline = time.monotonic() + 30
        while "get_stats" not in tools(endpoint):
            if time.monotonic() > deadline:
                raise SystemExit("the exposition was never served")
            time.sleep(0.05)
        times: dict[str, list[float]] = {"total": [], "cli": [], "after_exit": []}
        for number in range(changes):
            excluded = number % 2 == 0
            began = time.perf_counter()
            cli(env, "plan", "update", "default", "--exclude", "get_stats" if excluded else "")
            exited = time.perf_counter()
            while ("get_stats" in tools(endpoint)) == excluded:
                if time.perf_counter() - began > 30:
                    raise SystemExit(f"change {number} was not served within 30 s")
                time.sleep(0.002)
            served = time.perf_counter()
            times["total"].append(served - began)
            times["cli"].append(exited - began)
            times["after_exit"].append(served - exited)
        return times
    finally:
        for process in reversed(processes):
            stop(process)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--mode", choices=("embedded", "separate", "both"), default="both")
    args = parser.parse_args()
    modes = ("embedded", "separate") if args.mode == "both" else (args.mode,)
    print(f"{args.changes} changes per mode; milliseconds")
    print(f"{'mode':<10} {'what':<28} {'p50':>7} {'p99':>7} {'max':>7}")
    for mode in modes:
        with tempfile.TemporaryDirectory() as home:
            times = measure(mode, args.changes, Path(home))
        for key, label in (
            ("total", "CLI start to served"),
            ("cli", "the CLI process"),
            ("after_exit", "CLI exit to served"),
        ):
            values = [1000 * t for t in times[key]]
            print(
                f"{mode:<10} {label:<28} {statistics.median(values):>7.0f} {percentile(values, 0.99):>7.0f} "
                f"{max(values):>7.0f}"
            )


if __name__ == "__main__":
    main()
