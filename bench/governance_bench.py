"""What governance costs a gateway, side by side in the same rounds: 50 policy rules on a small answer, and the
three built-in guardrails on a 10 KB answer, each against the same gateway without them.

nginx (CPU 1) serves the item of `bench/item_api.yaml`, small or with 10 KB of records (no secret, no personal
data in it: the common case, where a guardrail's search finds nothing); `apimcp serve` (CPU 0) calls it for each
`tools/call` of a 2026-07-28 client; wrk (CPU 1) drives it.

    python -m bench.governance_bench [--rounds 3] [--duration 10] [--connections 16]

The rules are those of `bench/policy_bench.py`'s worst shape: none holds, each reads the caller, its claims,
the arguments and the tool, so all 50 are evaluated on every call (anonymous callers here: `claims` is empty).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from bench import gateway_bench, harness
from bench.gateway_bench import ITEM, ITEM_SPEC, apimcp_serve
from bench.harness import Scenario

RULES = [
    {"name": f"n{i}", "effect": "deny",
     "when": f'"group{i}" in claims.groups && caller.subject != "x{i}" && args.itemId > {i + 100} && !tool.read_only'}
    for i in range(50)
]  # fmt: skip
GUARDRAILS = [{"use": name, "action": "redact"} for name in ("secrets", "personal_data", "injection")]


def ten_kb_item() -> str:
    records = [
        {"sku": f"W-{i:05d}", "title": f"Widget number {i}, blue", "price": 9.5 + i, "stock": i * 3,
         "updated": "2026-12-01T10:00:00Z", "tags": ["blue", "small"]}
        for i in range(76)
    ]  # fmt: skip
    text = orjson.dumps({"id": 1, "name": "widget", "price": 9.5, "records": records}).decode()
    if not 9_500 <= len(text) <= 11_000:
        raise SystemExit(f"the big item is {len(text)} bytes, not about 10 KB")
    return text


def start_nginx(directory: Path) -> tuple[subprocess.Popen[bytes], int]:
    """nginx serving the small item at /small/items/ and the 10 KB one at /big/items/."""
    (directory / "big.json").write_text(ten_kb_item())
    directory.chmod(0o755)  # nginx's workers run as another user
    return gateway_bench.start_nginx(
        directory,
        f"""
    location /small/items/ {{ default_type application/json; return 200 '{ITEM}'; }}
    location /big/items/ {{ default_type application/json; root {directory}; try_files /big.json =404; }}""",
    )


def config(backend: str) -> str:
    return f"""
services:
  small: {{openapi: {ITEM_SPEC}, backend: "{backend}/small"}}
  big: {{openapi: {ITEM_SPEC}, backend: "{backend}/big"}}
expositions:
  plain: {{services: [small]}}
  ruled: {{services: [small], policies: {json.dumps(RULES)}}}
  big: {{services: [big]}}
  guarded: {{services: [big], guardrails: {json.dumps(GUARDRAILS)}}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    harness.require_tools("nginx", "wrk")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    scenarios = {
        "plain": Scenario("small answer"),
        "ruled": Scenario("small answer, 50 policy rules"),
        "big": Scenario("10 KB answer"),
        "guarded": Scenario("10 KB answer, 3 guardrails (redact)"),
    }
    call = {"name": "get_item", "arguments": {"itemId": 1}}
    body, headers = harness.modern_request("tools/call", call, name="get_item")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        gateway_config = tmp / "gateway.yaml"
        gateway_config.write_text(config(f"http://127.0.0.1:{nginx_port}"))
        port = harness.free_port()
        server = apimcp_serve([str(gateway_config)], port, connections=args.connections)
        try:
            script = harness.lua_script(body, headers, tmp)
            for round_number in range(1, args.rounds + 1):
                for name, scenario in scenarios.items():
                    url = f"http://127.0.0.1:{port}/mcp/{name}"
                    _, answer = harness.post(url, body, headers)
                    if answer.get("result", {}).get("structuredContent", {}).get("name") != "widget":  # type: ignore[union-attr]
                        raise SystemExit(f"unexpected answer from {name}: {str(answer)[:300]}")
                    harness.load(scenario, url, script, args.warmup, args.duration, args.connections)
                    print(f"round {round_number}: {scenario.label}: {scenario.rps[-1]:,.0f} req/s", file=sys.stderr)
        finally:
            harness.stop(server)
            harness.stop(nginx)
    title = f"tools/call, 2026-07-28, {args.connections} connections, {args.rounds} x {args.duration}s, medians"
    pairs = [(scenarios["ruled"], scenarios["plain"]), (scenarios["guarded"], scenarios["big"])]
    harness.print_comparison(title, pairs)


if __name__ == "__main__":
    main()
