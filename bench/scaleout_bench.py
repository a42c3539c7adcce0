"""Scale-out: what the shared state, extra workers and a load balancer cost and give.

1. Session-mode `tools/call` with the state in Redis (the machine's, a prefix of its own) against the
   in-memory store: the gateway pinned to CPU 0, nginx (the REST backend) and wrk on CPU 1.
2. `--workers 2` against 1 (both on Redis), the gateway free to use both CPUs, which it then shares with
   wrk and the backend: on a 2-core machine this shows what a second worker adds, not what a second core
   would on a larger one.
3. A round-robin nginx load balancer (CPU 1) in front of one gateway, then of two (CPU 0 and CPU 1),
   against one gateway reached directly: what the balancer costs per request, and how two gateways scale
   when they share the machine with it.
4. 2026-07-28 `tools/call` from a client that declared the tasks extension, with the plan's task mode
   `slow:1s` against `off`: what running every call as a possible task costs when calls are quick (each is
   started in the background and answered directly within the second).
5. `cores` (not in the default parts): `--workers 2` against `--workers 1` with every worker pinned to CPU 0, in
   both eras. The core count held, what is left is what a worker costs beside another (the state store, the
   shared port); and `ss` counts, halfway through each run, how the shared port gave wrk's connections out to
   the two workers. Both together say how close N workers come to N times one worker's rate on a machine with
   N cores free for them, which this 2-core machine, with wrk and the backend on the second core, cannot show
   directly.

    python -m bench.scaleout_bench [--rounds 3] [--duration 10] [--parts store,workers,balancer,tasks,cores]

Figures are medians of interleaved rounds; ratios are taken within each round (bench/harness.py).
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from bench import harness
from bench.gateway_bench import ITEM_SPEC, apimcp_serve, check_item, start_nginx
from bench.harness import Scenario

CALL = {"name": "get_item", "arguments": {"itemId": 1}}
REDIS = os.environ.get("APIMCP_BENCH_REDIS", "redis://127.0.0.1:6379/0")


def redis_env() -> dict[str, str]:
    return {
        "APIMCP_STATE_URL": REDIS,
        "APIMCP_STATE_PREFIX": f"apimcp-bench:{secrets.token_hex(4)}:",
        "APIMCP_STATE_KEY": base64.b64encode(os.urandom(32)).decode(),
        "APIMCP_REQUEST_STATE_KEYS": secrets.token_hex(32),
    }


def start_balancer(directory: Path, upstreams: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    """nginx as deploy/nginx.conf configures it (round robin, no buffering), pinned to CPU 1."""
    port = harness.free_port()
    conf = directory / f"balancer-{port}.conf"
    servers = "\n".join(f"    server 127.0.0.1:{upstream};" for upstream in upstreams)
    conf.write_text(f"""
worker_processes 1;
daemon off;
pid {directory}/balancer-{port}.pid;
error_log {directory}/balancer-error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  upstream gateways {{
{servers}
    keepalive 64;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://gateways;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_next_upstream error;
    }}
  }}
}}
""")
    command = ["nginx", "-p", str(directory), "-e", str(directory / "balancer-error.log"), "-c", str(conf)]
    return harness.start_pinned(1, command, port, "balancer"), port


def measure(scenario: Scenario, url: str, args: argparse.Namespace, tmp: Path) -> None:
    headers = harness.open_session(url)
    body: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": CALL}
    check_item(url, body, headers)
    script = harness.lua_script(body, headers, tmp)
    harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
    print(f"{scenario.label}: {scenario.rps[-1]:,.0f} req/s, p99 {scenario.p99[-1]:.1f} ms", file=sys.stderr)


def measure_modern(scenario: Scenario, url: str, args: argparse.Namespace, tmp: Path) -> None:
    """2026-07-28 tools/call from a client that declared the tasks extension."""
    _, headers = harness.modern_request("tools/call", {}, name="get_item")
    capabilities: dict[str, object] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    meta = {**harness.MODERN_META, "io.modelcontextprotocol/clientCapabilities": capabilities}
    body: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**CALL, "_meta": meta}}
    check_item(url, body, headers)
    script = harness.lua_script(body, headers, tmp)
    harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
    print(f"{scenario.label}: {scenario.rps[-1]:,.0f} req/s, p99 {scenario.p99[-1]:.1f} ms", file=sys.stderr)


def measure_stateless(scenario: Scenario, url: str, args: argparse.Namespace, tmp: Path) -> None:
    body, headers = harness.modern_request("tools/call", CALL, name="get_item")
    check_item(url, body, headers)
    script = harness.lua_script(body, headers, tmp)
    harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
    print(f"{scenario.label}: {scenario.rps[-1]:,.0f} req/s, p99 {scenario.p99[-1]:.1f} ms", file=sys.stderr)


def tasks_part(args: argparse.Namespace, tmp: Path, config: Path) -> list[Scenario]:
    off, slow = Scenario("2026-07-28 tools/call, tasks off"), Scenario("2026-07-28 tools/call, tasks slow:1s")
    text = config.read_text()
    variants = []
    for scenario, mode in ((off, "off"), (slow, "slow:1s")):
        variant = tmp / f"gateway-tasks-{mode.replace(':', '-')}.yaml"
        variant.write_text(f"{text}expositions:\n  items:\n    services: [items]\n    tasks: {mode}\n")
        variants.append((scenario, variant))
    for _ in range(args.rounds):
        for scenario, variant in variants:
            port = harness.free_port()
            server = apimcp_serve([str(variant)], port, connections=args.connections, cpus="0")
            try:
                measure_modern(scenario, f"http://127.0.0.1:{port}/mcp/items", args, tmp)
            finally:
                harness.stop(server)
    return [off, slow]


def one_gateway_rounds(
    args: argparse.Namespace, tmp: Path, variants: list[tuple[Scenario, list[str], dict[str, str], str]]
) -> list[Scenario]:
    """Each round, each variant (scenario, `apimcp serve` arguments, environment, CPUs) served and measured."""
    for _ in range(args.rounds):
        for scenario, arguments, env, cpus in variants:
            port = harness.free_port()
            server = apimcp_serve(arguments, port, connections=args.connections, env=env, cpus=cpus)
            try:
                measure(scenario, f"http://127.0.0.1:{port}/mcp/items", args, tmp)
            finally:
                harness.stop(server)
    return [scenario for scenario, *_ in variants]


def store_part(args: argparse.Namespace, tmp: Path, config: Path) -> list[Scenario]:
    memory, redis = Scenario("session tools/call, memory store"), Scenario("session tools/call, Redis store")
    return one_gateway_rounds(args, tmp, [(memory, [str(config)], {}, "0"), (redis, [str(config)], redis_env(), "0")])


def workers_part(args: argparse.Namespace, tmp: Path, config: Path) -> list[Scenario]:
    one, two = Scenario("--workers 1 (Redis), CPUs 0-1"), Scenario("--workers 2 (Redis), CPUs 0-1")
    variants = [
        (scenario, [str(config), "--workers", n], redis_env(), "0,1") for scenario, n in ((one, "1"), (two, "2"))
    ]
    return one_gateway_rounds(args, tmp, variants)


def connections_by_process(port: int) -> Counter[int]:
    """How many established connections to `port` each process holds (by pid), as `ss` sees them."""
    listed = subprocess.run(
        ["ss", "-tnpH", "state", "established", f"( sport = :{port} )"], check=True, capture_output=True, text=True
    ).stdout
    return Counter(int(pid) for pid in re.findall(r"pid=(\d+)", listed))


def cores_part(args: argparse.Namespace, tmp: Path, config: Path) -> list[Scenario]:
    scenarios = {
        (era, workers): Scenario(f"{era}, --workers {workers} (Redis), all on CPU 0")
        for era in ("2025-11-25 session", "2026-07-28 stateless") for workers in (1, 2)
    }  # fmt: skip
    splits: list[tuple[str, list[int]]] = []
    for _ in range(args.rounds):
        for (era, workers), scenario in scenarios.items():
            port = harness.free_port()
            env = redis_env()
            server = apimcp_serve([str(config), "--workers", str(workers)], port, connections=args.connections,
                                  env=env, cpus="0")  # fmt: skip
            sample: list[Counter[int]] = []
            halfway = args.warmup + args.duration / 2
            timer = threading.Timer(halfway, lambda into, at: into.append(connections_by_process(at)), (sample, port))
            try:
                url = f"http://127.0.0.1:{port}/mcp/items"
                timer.start()
                (measure if era.endswith("session") else measure_stateless)(scenario, url, args, tmp)
            finally:
                timer.cancel()
                harness.stop(server)
            if workers == 2 and sample:
                splits.append((era, sorted(sample[0].values(), reverse=True)))
    for era, split in splits:
        print(f"{era}: wrk's {args.connections} connections per worker of 2: {split}", file=sys.stderr)
    return list(scenarios.values())


def balancer_part(args: argparse.Namespace, tmp: Path, config: Path) -> list[Scenario]:
    direct = Scenario("one gateway, direct")
    through = Scenario("balancer -> one gateway")
    pair = Scenario("balancer -> two gateways (CPU 0, CPU 1)")
    for _ in range(args.rounds):
        for scenario, cpus in ((direct, ["0"]), (through, ["0"]), (pair, ["0", "1"])):
            env = redis_env()
            ports = [harness.free_port() for _ in cpus]
            servers = [
                apimcp_serve([str(config)], port, connections=args.connections, env=env, cpus=cpu)
                for port, cpu in zip(ports, cpus, strict=True)
            ]
            balancer = None
            try:
                target = ports[0]
                if scenario is not direct:
                    balancer, target = start_balancer(tmp, ports)
                measure(scenario, f"http://127.0.0.1:{target}/mcp/items", args, tmp)
            finally:
                if balancer is not None:
                    harness.stop(balancer)
                for server in servers:
                    harness.stop(server)
    return [direct, through, pair]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--parts", default="store,workers,balancer,tasks")
    args = parser.parse_args()
    harness.require_tools("nginx", "wrk", "taskset")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    parts = {part.strip() for part in args.parts.split(",")}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        backend, backend_port = start_nginx(tmp)
        config = tmp / "gateway.yaml"
        config.write_text(
            f"services:\n  items:\n    openapi: {ITEM_SPEC}\n    backend: http://127.0.0.1:{backend_port}\n"
        )
        try:
            tables = []
            if "store" in parts:
                tables.append(("the state store", store_part(args, tmp, config)))
            if "workers" in parts:
                tables.append(("workers on one machine", workers_part(args, tmp, config)))
            if "balancer" in parts:
                tables.append(("a load balancer in front", balancer_part(args, tmp, config)))
            if "tasks" in parts:
                tables.append(("the task mode, quick calls", tasks_part(args, tmp, config)))
            if "cores" in parts:
                tables.append(("workers sharing one core", cores_part(args, tmp, config)))
        finally:
            harness.stop(backend)
    for title, scenarios in tables:
        harness.print_table(f"{title}: {args.connections} connections, {args.rounds} x {args.duration}s, medians",
                            scenarios, scenarios[0])  # fmt: skip


if __name__ == "__main__":
    main()
