"""Gateway memory with many expositions of GitHub's REST API (~1,200 operations each).

    python -m bench.memory_bench [--expositions 100] [--spec PATH]

A control plane and a separate gateway run as processes. The description is imported once; each
exposition has its own plan. By default the plans select the same operations (expositions then share
their tools); with --distinct, plan N excludes operation N, so that no two tool lists are alike. The
gateway's resident memory (VmRSS, and its peak VmHWM) is read from /proc: with nothing to serve, once
every exposition is served, and after one tools/list on each (which encodes and caches the list).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.harness import ROOT, free_port, modern_request, post, stop, wait_for_port
from bench.import_bench import DEFAULT_SPEC

APIMCP = [sys.executable, "-m", "apimcp.cli"]


def memory_mb(pid: int) -> tuple[float, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def api(base: str, token: str, method: str, path: str, body: object = None) -> Any:
    request = urllib.request.Request(
        f"{base}/api/v1{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read() or b"null")


def health(base: str) -> Any:
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as response:
        return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--expositions", type=int, default=100)
    parser.add_argument("--spec", type=Path, default=DEFAULT_SPEC)
    parser.add_argument("--distinct", action="store_true", help="give every exposition a different selection")
    args = parser.parse_args()
    if not args.spec.exists():
        raise SystemExit(f"{args.spec} not found (pass --spec)")
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "APIMCP_HOME": f"{home}/data", "APIMCP_CONFIG": f"{home}/context.json"}
        plane_port, gateway_port = free_port(), free_port()
        plane_url, gateway_url = f"http://127.0.0.1:{plane_port}", f"http://127.0.0.1:{gateway_port}"
        plane = subprocess.Popen(
            [*APIMCP, "control-plane", "--port", str(plane_port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        gateway = None
        try:
            wait_for_port(plane_port, plane, "control plane")
            token = Path(f"{home}/data/bootstrap-token").read_text().strip()
            subprocess.run([*APIMCP, "login", plane_url, "--token", token], env=env, check=True, capture_output=True)
            began = time.perf_counter()
            imported = json.loads(
                subprocess.run(
                    [*APIMCP, "import", str(args.spec), "--name", "github", "-o", "json"],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
            print(
                f"imported {imported['service']['operation_count']} operations in "
                f"{time.perf_counter() - began:.1f} s (CLI upload and control plane import)"
            )
            gateway_token = api(plane_url, token, "POST", "/tokens", {"name": "bench", "kind": "gateway"})["token"]
            key_file = Path(home) / "gateway-key.pem"
            key_command = [*APIMCP, "gateway-key", "create", "bench", "--out", str(key_file)]
            subprocess.run(key_command, env=env, check=True, capture_output=True)
            gateway_command = [*APIMCP, "gateway", "--control-plane", plane_url, "--port", str(gateway_port)]
            gateway = subprocess.Popen(
                [*gateway_command, "--key-file", str(key_file)],
                cwd=ROOT,
                env={**env, "APIMCP_GATEWAY_TOKEN": gateway_token},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            wait_for_port(gateway_port, gateway, "gateway")
            time.sleep(1)
            empty = memory_mb(gateway.pid)
            service_id = imported["service"]["id"]
            operations: list[dict[str, str]] = api(plane_url, token, "GET", f"/services/{service_id}")["operations"]
            for number in range(args.expositions):
                plan: dict[str, str] = api(
                    plane_url,
                    token,
                    "POST",
                    "/plans",
                    {
                        "name": f"plan-{number}",
                        "service_id": service_id,
                        "backend_endpoint": "https://api.github.com",
                        "exclude": [operations[number]["tool_name"]] if args.distinct else [],
                    },
                )
                api(plane_url, token, "POST", "/expositions", {"plan_id": plan["id"], "name": f"github-{number}"})
            created = time.perf_counter()
            while health(gateway_url)["expositions"] < args.expositions:
                time.sleep(0.05)
            print(
                f"the gateway served all {args.expositions} expositions {time.perf_counter() - created:.1f} s "
                f"after the last was created"
            )
            served = memory_mb(gateway.pid)
            body, headers = modern_request("tools/list", {})
            tools = 0
            for number in range(args.expositions):
                _, reply = post(f"{gateway_url}/mcp/default/github-{number}", body, headers)
                tools = len(reply["result"]["tools"])  # type: ignore[index]
            listed = memory_mb(gateway.pid)
        finally:
            if gateway is not None:
                stop(gateway)
            stop(plane)
    selections = "distinct selections" if args.distinct else "the same selection"
    print(f"\ngateway memory, {args.expositions} expositions of {args.spec.name} ({tools} tools each, {selections})")
    print(f"{'state':<36} {'RSS MB':>8} {'peak MB':>8}")
    for label, (rss, peak) in (
        ("nothing to serve", empty),
        (f"{args.expositions} expositions served", served),
        ("after tools/list on each", listed),
    ):
        print(f"{label:<36} {rss:>8.0f} {peak:>8.0f}")
    print(
        f"per exposition: {(served[0] - empty[0]) / args.expositions:.1f} MB served, "
        f"{(listed[0] - empty[0]) / args.expositions:.1f} MB after listing"
    )


if __name__ == "__main__":
    main()
