"""The gateway in front of a REST API, side by side with a bare JSON-RPC -> HTTP proxy.

1. `tools/call` throughput: nginx (CPU 1) serves a small JSON item; the bare proxy
   (bench/proxy_app.py, the practical limit) and `apimcp serve` (CPU 0) call it for
   every request; wrk (CPU 1) drives each with 64 connections.
2. `tools/list` latency for the GitHub exposition (~1,200 tools): one connection, so the
   figures are per-request latency.

    python -m bench.gateway_bench [--rounds 3] [--duration 10] [--baseline DIR]

`--baseline DIR` also runs `apimcp serve` from another checkout (with its own `.venv`) in the
same rounds of part 1, and reports this checkout's gateway against it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import harness
from bench.harness import THIS, Checkout, Scenario

ITEM_SPEC = Path(__file__).resolve().parent / "item_api.yaml"
GITHUB_SPEC = harness.ROOT.parent / "shared" / "corpus" / "openapi" / "github" / "api.github.com.json"
ITEM = '{"id":1,"name":"widget","price":9.5}'


ITEM_LOCATION = f"location /items/ {{ default_type application/json; return 200 '{ITEM}'; }}"


def start_nginx(directory: Path, locations: str = ITEM_LOCATION) -> tuple[subprocess.Popen[bytes], int]:
    """nginx on CPU 1 serving `locations` (nginx `location` blocks; by default the small item at /items/)."""
    port = harness.free_port()
    conf = directory / "nginx.conf"
    conf.write_text(
        f"""
worker_processes 1;
daemon off;
pid {directory}/nginx.pid;
error_log {directory}/nginx-error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  server {{
    listen 127.0.0.1:{port};
    {locations}
  }}
}}
"""
    )
    command = ["nginx", "-p", str(directory), "-e", str(directory / "nginx-error.log"), "-c", str(conf)]
    return harness.start_pinned(1, command, port, "nginx"), port


def apimcp_serve(
    arguments: list[str],
    port: int,
    checkout: Checkout = THIS,
    connections: int = 64,
    *,
    env: dict[str, str] | None = None,
    cpus: str = "0",
) -> subprocess.Popen[bytes]:
    """`apimcp serve ARGUMENTS` pinned to `cpus`, with `env` added to this process's environment."""
    command = [checkout.python, "-m", "apimcp.cli", "serve", *arguments, "--port", str(port)]
    # wrk's connections all share one session, far more requests at once than one client sends (32 by default);
    # twice as many, since a request still counts for a moment after wrk has its answer and sends the next one
    # (with just as many, the gRPC rows of backends_bench saw a few 429s)
    full_env = {**os.environ, "APIMCP_MCP_MAX_REQUESTS_PER_SESSION": str(max(32, 2 * connections)), **(env or {})}
    process = subprocess.Popen(
        ["taskset", "-c", cpus, *command], cwd=checkout.root, stdout=subprocess.DEVNULL, env=full_env
    )
    harness.wait_for_port(port, process, "apimcp serve")
    return process


def check_item(url: str, body: dict[str, object], headers: dict[str, str]) -> None:
    _, answer = harness.post(url, body, headers)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("structuredContent", {}).get("name") != "widget":
        raise SystemExit(f"unexpected answer {answer}")


def call_throughput(args: argparse.Namespace, tmp: Path, backend: str) -> list[Scenario]:
    proxy = Scenario("bare aiohttp JSON-RPC -> HTTP proxy")
    gateways = [
        (Scenario("apimcp gateway, 2026-07-28 stateless"), THIS),
        (Scenario("apimcp gateway, 2025-11-25 session"), THIS),
    ]
    if args.baseline is not None:
        baseline = Checkout.at(args.baseline)
        gateways += [(Scenario(f"baseline: {scenario.label}"), baseline) for scenario, _ in gateways]
    config = tmp / "gateway.yaml"
    config.write_text(f"services:\n  items:\n    openapi: {ITEM_SPEC}\n    backend: {backend}\n")
    call = {"name": "get_item", "arguments": {"itemId": 1}}
    for round_number in range(1, args.rounds + 1):
        for scenario, checkout in [(proxy, THIS), *gateways]:
            port = harness.free_port()
            if scenario is proxy:
                env_command = ["env", f"BACKEND={backend}", *harness.uvicorn_command("bench.proxy_app:app", port)]
                server = harness.start_pinned(0, env_command, port, "proxy")
                url = f"http://127.0.0.1:{port}/mcp"
            else:
                server = apimcp_serve([str(config)], port, checkout, args.connections)
                url = f"http://127.0.0.1:{port}/mcp/items"
            try:
                if "session" in scenario.label:
                    headers = harness.open_session(url)
                    body: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
                else:
                    body, headers = harness.modern_request("tools/call", call, name="get_item")
                check_item(url, body, headers)
                script = harness.lua_script(body, headers, tmp)
                harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
            finally:
                harness.stop(server)
            print(f"round {round_number}: {scenario.label}: {scenario.rps[-1]:,.0f} req/s", file=sys.stderr)
    return [proxy, *(scenario for scenario, _ in gateways)]


def list_latency(args: argparse.Namespace, tmp: Path) -> list[Scenario]:
    modern = Scenario("GitHub exposition tools/list, 2026-07-28")
    legacy = Scenario("GitHub exposition tools/list, 2025-11-25 session")
    port = harness.free_port()
    server = apimcp_serve(["--openapi", str(GITHUB_SPEC), "--backend", "http://127.0.0.1:9", "--name", "github"], port)
    url = f"http://127.0.0.1:{port}/mcp/github"
    try:
        for round_number in range(1, args.rounds + 1):
            for scenario in (modern, legacy):
                if scenario is modern:
                    body, headers = harness.modern_request("tools/list", {})
                else:
                    headers = harness.open_session(url)
                    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
                _, answer = harness.post(url, body, headers)
                count = len(answer["result"]["tools"])  # type: ignore[index, arg-type]
                script = harness.lua_script(body, headers, tmp)
                harness.load(scenario, url, script, args.warmup, args.duration, 1)
                print(f"round {round_number}: {scenario.label} ({count} tools): p50 {scenario.p50[-1]:.2f} ms",
                      file=sys.stderr)  # fmt: skip
    finally:
        harness.stop(server)
    return [modern, legacy]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--skip-list", action="store_true", help="skip the GitHub tools/list latency part")
    parser.add_argument("--baseline", type=Path, help="another checkout whose gateway is measured beside this one")
    args = parser.parse_args()
    harness.require_tools("nginx")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        try:
            calls = call_throughput(args, tmp, f"http://127.0.0.1:{nginx_port}")
        finally:
            harness.stop(nginx)
        title = f"tools/call via the gateway, {args.connections} connections, {args.rounds} x {args.duration}s, medians"
        harness.print_table(title, calls, calls[0])
        if args.baseline is not None:
            pairs = [(this, other) for other in calls[3:] for this in calls[1:3] if other.label.endswith(this.label)]
            harness.print_comparison(f"this checkout against {args.baseline}", pairs)
        if not args.skip_list and GITHUB_SPEC.exists():
            lists = list_latency(args, tmp)
            harness.print_table(
                f"tools/list, one connection, {args.rounds} x {args.duration}s, medians", lists, lists[0]
            )


if __name__ == "__main__":
    main()
