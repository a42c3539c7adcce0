"""The common call with each of the gateway's features switched on, side by side with the bare proxy, and with
the same feature in another checkout (`--baseline`): "no feature slower than before".

nginx (CPU 1) serves the small item of `bench/item_api.yaml`; one `apimcp serve` (CPU 0) serves it through one
exposition per feature, and wrk (CPU 1) sends 2026-07-28 `tools/call`s to each in turn:

- `plain`: `get_item`, nothing switched on;
- `jwt`: OAuth, the same ES256 token on every request (verified once, then found in the gateway's cache), its
  issuer `bench/jwks_server.py` on CPU 1;
- `policy`: 50 CEL rules that each read the caller, the claims, the arguments and the tool, none holding;
- `filter`: an output filter (`bench/artifacts/output-filters.yaml`: keep `/id` and `/name`);
- `code mode`: `execute_code` running a program that calls `tools.get_item` once and returns what it answers
  (at 32 connections at most: an exposition runs 3 programs at once and queues 32, and refuses more, quickly);
- `federated`: a tool of an MCP server the gateway fronts (`bench.apps:engine` on CPU 1, called statelessly),
  not the item: its row is against the bare proxy all the same, for scale, and against the baseline for change.

Every scenario's answer is checked once before it is measured, and wrk reads every answer during the run: one
that is not a successful result (a refusal answers fast) stops the benchmark. Rounds interleave the bare proxy,
this checkout's gateway and the baseline's; ratios are medians of same-round ratios.

    python -m bench.features_bench [--rounds 3] [--duration 10] [--connections 64,4] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import harness
from bench.auth_bench import start_issuer, tokens
from bench.gateway_bench import ITEM_SPEC, apimcp_serve, start_nginx
from bench.governance_bench import RULES
from bench.harness import THIS, Checkout, Scenario

FILTERS = Path(__file__).resolve().parent / "artifacts" / "output-filters.yaml"
PROGRAM = "return await tools.get_item({itemId: 1});"


@dataclass(frozen=True)
class Feature:
    exposition: str
    tool: str
    arguments: dict[str, object]
    answered: Callable[[dict[str, object]], bool]
    """Whether a `tools/call` result is the one this scenario must answer."""
    max_connections: int = 1024


def _structured_name(result: dict[str, object]) -> bool:
    structured = result.get("structuredContent")
    return isinstance(structured, dict) and structured.get("name") == "widget"


def _greeted(result: dict[str, object]) -> bool:
    content = result.get("content")
    return isinstance(content, list) and bool(content) and content[0].get("text") == "Hello, wrk!"


def _filtered(result: dict[str, object]) -> bool:
    return result.get("structuredContent") == {"id": 1, "name": "widget"}


ITEM_CALL = {"itemId": 1}
FEATURES = {
    "plain": Feature("plain", "get_item", ITEM_CALL, _structured_name),
    "jwt": Feature("jwt", "get_item", ITEM_CALL, _structured_name),
    "policy": Feature("policy", "get_item", ITEM_CALL, _structured_name),
    "filter": Feature("filter", "get_item", ITEM_CALL, _filtered),
    "code mode": Feature("code", "execute_code", {"code": PROGRAM}, _structured_name, max_connections=32),
    "federated": Feature("federated", "greet", {"name": "wrk"}, _greeted),
}


def config(nginx: str, issuer: str, upstream: str, public: str) -> str:
    return f"""
services:
  item: {{openapi: {ITEM_SPEC}, name: item, version: "1", backend: "{nginx}"}}
  shaped: {{openapi: {ITEM_SPEC}, name: shaped, version: "1", backend: "{nginx}", artifacts: [{FILTERS}]}}
  up: {{mcp: "{upstream}"}}
expositions:
  plain: {{services: [item]}}
  jwt: {{services: [item], auth: {{oauth: {{issuers: ["{issuer}"], scopes: [items:read]}}}}}}
  policy: {{services: [item], policies: {json.dumps(RULES)}}}
  filter: {{services: [shaped]}}
  code: {{services: [item], code_mode: "on"}}
  federated: {{services: [up]}}
server:
  public_url: {public}
  fetch_allow: [127.0.0.1]
"""


def measure(
    url: str, feature: Feature, headers: dict[str, str], scenario: Scenario, tmp: Path, args: argparse.Namespace,
    connections: int,
) -> None:  # fmt: skip
    call: dict[str, object] = {"name": feature.tool, "arguments": feature.arguments}
    body, modern = harness.modern_request("tools/call", call, name=feature.tool)
    deadline = time.monotonic() + 10  # what the previous run left queued (code mode's programs) ends first
    while True:
        _, answer = harness.post(url, body, {**headers, **modern})
        result = answer.get("result")
        if isinstance(result, dict) and not result.get("isError") and feature.answered(result):
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"unexpected answer from {url}: {str(answer)[:400]}")
        time.sleep(0.5)
    script = harness.lua_script(body, {**headers, **modern}, tmp, check_answers=True)
    harness.load(scenario, url, script, args.warmup, args.duration, connections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per scenario and round")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unrecorded load before each run")
    parser.add_argument("--connections", default="64", help="comma-separated connection counts")
    parser.add_argument("--baseline", type=Path, help="another checkout whose gateway is measured beside this one")
    args = parser.parse_args()
    harness.require_tools("nginx")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    counts = [int(c) for c in args.connections.split(",")]
    checkouts = [THIS] if args.baseline is None else [THIS, Checkout.at(args.baseline)]
    proxies = {n: Scenario("bare aiohttp JSON-RPC -> HTTP proxy") for n in counts}
    rows = {
        (checkout, name, n): Scenario(("" if checkout is THIS else "baseline: ") + name)
        for checkout in checkouts for name, feature in FEATURES.items() for n in counts if n <= feature.max_connections
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        issuer, issuer_url, key = start_issuer(tmp)
        upstream_port = harness.free_port()
        upstream = harness.start_pinned(
            1, harness.uvicorn_command("bench.apps:engine", upstream_port), upstream_port, "the MCP upstream"
        )
        backend = f"http://127.0.0.1:{nginx_port}"
        try:
            for round_number in range(1, args.rounds + 1):
                measure_proxy(backend, proxies, tmp, args)
                for checkout in checkouts:
                    port = harness.free_port()
                    public = f"http://127.0.0.1:{port}"
                    path = tmp / "features.yaml"
                    path.write_text(config(backend, issuer_url, f"http://127.0.0.1:{upstream_port}/mcp", public))
                    token = tokens(key, issuer_url, f"{public}/mcp/jwt", 1)[0]
                    gateway = apimcp_serve([str(path)], port, checkout, max(counts))
                    try:
                        for name, feature in FEATURES.items():
                            headers = {"Authorization": f"Bearer {token}"} if name == "jwt" else {}
                            for n in counts:
                                scenario = rows.get((checkout, name, n))
                                if scenario is None:
                                    continue
                                url = f"{public}/mcp/{feature.exposition}"
                                measure(url, feature, headers, scenario, tmp, args, n)
                                print(f"round {round_number}, {n} connections: {scenario.label}: "
                                      f"{scenario.rps[-1]:,.0f} req/s", file=sys.stderr)  # fmt: skip
                    finally:
                        harness.stop(gateway)
        finally:
            for process in (upstream, issuer, nginx):
                harness.stop(process)
    for n in counts:
        measured = [rows[THIS, name, n] for name in FEATURES if (THIS, name, n) in rows]
        harness.print_table(
            f"tools/call (2026-07-28) per feature, {n} connections, {args.rounds} x {args.duration}s, medians",
            [proxies[n], *measured], proxies[n],
        )  # fmt: skip
        if args.baseline is not None:
            pairs = [(rows[THIS, name, n], rows[checkouts[1], name, n]) for name in FEATURES if (THIS, name, n) in rows]
            harness.print_comparison(f"{n} connections: this checkout against {args.baseline}", pairs)


def measure_proxy(backend: str, proxies: dict[int, Scenario], tmp: Path, args: argparse.Namespace) -> None:
    port = harness.free_port()
    command = ["env", f"BACKEND={backend}", *harness.uvicorn_command("bench.proxy_app:app", port)]
    server: subprocess.Popen[bytes] = harness.start_pinned(0, command, port, "proxy")
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for n, scenario in proxies.items():
            measure(url, FEATURES["plain"], {}, scenario, tmp, args, n)
    finally:
        harness.stop(server)


if __name__ == "__main__":
    main()
