"""`tools/call` behind OAuth (JWT access tokens verified against a JWK set) vs the same tool without inbound
authentication, side by side in one run.

One `apimcp serve` (CPU 0) serves `bench/item_api.yaml` twice: `open` (no inbound authentication) and `jwt`
(OAuth: issuer, audience, a scope). The issuer is bench/jwks_server.py on CPU 1: it serves its metadata and
JWK set (an ES256 key made at start), which the gateway fetches once; this script signs the tokens with the
same key. nginx serves the item on CPU 1, and wrk (CPU 1, 64 connections) sends:

- `open`: no token;
- `jwt, one token`: the same token on every request, as a client does until it expires (the gateway verifies
  it once and then finds it in its cache of verified tokens);
- `jwt, 20,000 tokens`: a different token on each request, cycling through more tokens than the gateway
  caches (10,000), so that every request verifies a signature: the worst case.

Rows are same-round ratios to `open`, in both eras; every answer is checked once before measuring.

`--in-process` measures instead what the authentication layer costs a request on its own, without sockets:
the gateway's ASGI app is called directly with 2026-07-28 `tools/list` requests (no backend call, so the
layer's share is as large as it can be), alternating batches of each scenario, and the CPU time of the
thread per request is reported (medians of the batches).

    python -m bench.auth_bench [--rounds 3] [--duration 5] [--in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jwt

from apimcp.backends.rest import close_session, new_session
from apimcp.gateway.config import parse_config
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.plan import plan_gateway
from bench import harness
from bench.gateway_bench import ITEM_SPEC, start_nginx
from bench.harness import Scenario
from bench.jwks_server import serve_in_thread

SESSION = "2025-11-25 session"
MODERN = "2026-07-28 stateless"
POOL = 20_000


def start_issuer(directory: Path) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    port = harness.free_port()
    key_file = directory / "issuer-key.json"
    command = [sys.executable, "-m", "bench.jwks_server", "--port", str(port), "--key-out", str(key_file)]
    process = harness.start_pinned(1, command, port, "the JWK set server")
    for _ in range(50):
        if key_file.exists() and key_file.stat().st_size:
            break
        time.sleep(0.1)
    return process, f"http://127.0.0.1:{port}", json.loads(key_file.read_text())


def write_config(directory: Path, nginx: str, issuer: str, public: str) -> Path:
    config = directory / "auth-gateway.yaml"
    config.write_text(
        f"""
services:
  item: {{openapi: {ITEM_SPEC}, name: item, version: "1", backend: "{nginx}"}}
expositions:
  open: {{services: [item]}}
  jwt:
    services: [item]
    auth: {{oauth: {{issuers: ["{issuer}"], scopes: [items:read]}}}}
server:
  public_url: {public}
  fetch_allow: [127.0.0.1]
"""
    )
    return config


def tokens(key: dict[str, str], issuer: str, audience: str, count: int) -> list[str]:
    private = jwt.PyJWK(key).key
    now = int(time.time())
    claims = {"iss": issuer, "aud": audience, "scope": "items:read", "iat": now, "exp": now + 3600}
    signed = (
        jwt.encode({**claims, "sub": f"user-{i}"}, private, algorithm="ES256", headers={"kid": key["kid"]})
        for i in range(count)
    )
    return list(signed)


def rotating_script(body: dict[str, object], headers: dict[str, str], pool: list[str], directory: Path) -> Path:
    """harness.lua_script, with `Authorization: Bearer <the next token of the pool>` on each request."""
    script = harness.lua_script(body, headers, directory)
    token_file = directory / f"tokens-{len(pool)}.txt"
    token_file.write_text("\n".join(pool) + "\n")
    text = script.read_text().replace(
        "request = function()",
        "local tokens = {}\n"
        f"for line in io.lines({json.dumps(str(token_file))}) do tokens[#tokens + 1] = line end\n"
        "local next_token = math.random(#tokens)\n"
        "request = function()\n"
        "  next_token = next_token % #tokens + 1\n"
        '  headers["Authorization"] = "Bearer " .. tokens[next_token]',
    )
    rotating = directory / f"rotating-{script.name}"
    rotating.write_text(text)
    return rotating


def request(url: str, era: str, headers: dict[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    call: dict[str, object] = {"name": "get_item", "arguments": {"itemId": 1}}
    if era == SESSION:
        session = harness.open_session(url, extra=headers)
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, {**headers, **session}
    body, modern = harness.modern_request("tools/call", call, name="get_item")
    return body, {**headers, **modern}


def check(url: str, body: dict[str, object], headers: dict[str, str]) -> None:
    _, answer = harness.post(url, body, headers)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise SystemExit(f"unexpected answer {answer}")


async def _asgi_call(app: Any, body: bytes, headers: list[tuple[bytes, bytes]]) -> int:
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "method": "POST", "path": headers[-1][1].decode(), "scheme": "http",
             "headers": headers[:-1], "client": ("127.0.0.1", 5000), "query_string": b""}  # fmt: skip
    await app(scope, receive, send)
    return status


def in_process(rounds: int) -> None:
    """The authentication layer's CPU time per request, the ASGI app called directly (see the docstring)."""
    issuer, key = serve_in_thread()
    base = "http://127.0.0.1"
    config = write_config(Path(tempfile.mkdtemp()), "http://127.0.0.1:9", issuer, base)
    pool = tokens(key, issuer, f"{base}/mcp/jwt", POOL)
    body, modern = harness.modern_request("tools/list", {})
    payload = json.dumps(body).encode()

    def headers(path: str, token: str | None) -> list[tuple[bytes, bytes]]:
        listed = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), (b"accept", harness.ACCEPT.encode()),
                  *((k.lower().encode(), v.encode()) for k, v in modern.items())]  # fmt: skip
        if token is not None:
            listed.append((b"authorization", f"Bearer {token}".encode()))
        return [*listed, (b":path", path.encode())]

    async def run() -> None:
        session = new_session()
        app = build_gateway(plan_gateway(parse_config(config.read_text(), "auth.yaml", config.parent)), session)
        try:
            rows = {
                "no inbound authentication": [headers("/mcp/open", None)],
                "JWT, one token (cached)": [headers("/mcp/jwt", pool[0])],
                f"JWT, {POOL:,} tokens (every one verified)": [headers("/mcp/jwt", t) for t in pool],
            }
            for name, listed in rows.items():
                status = await _asgi_call(app, payload, listed[0])
                if status != 200:
                    raise SystemExit(f"{name}: HTTP {status}")
            timings: dict[str, list[float]] = {name: [] for name in rows}
            batch = 2000
            for round_number in range(rounds * 5):
                for name, listed in rows.items():
                    started = time.thread_time()
                    for i in range(batch):
                        await _asgi_call(app, payload, listed[(round_number * batch + i) % len(listed)])
                    timings[name].append((time.thread_time() - started) / batch * 1e6)
            open_us = statistics.median(timings["no inbound authentication"])
            print(f"\nin process: 2026-07-28 tools/list, CPU time per request, {rounds * 5} batches of {batch}")
            for name, values in timings.items():
                median = statistics.median(values)
                print(f"{name:<48} {median:8.1f} µs  (+{median - open_us:6.1f} µs)  {open_us / median:6.0%}")
        finally:
            await app.runtime.close()
            await close_session(session)

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    if args.in_process:
        in_process(args.rounds)
        return
    harness.require_tools("nginx")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nginx, nginx_port = start_nginx(tmp)
        issuer_process, issuer, key = start_issuer(tmp)
        port = harness.free_port()
        base = f"http://127.0.0.1:{port}"
        config = write_config(tmp, f"http://127.0.0.1:{nginx_port}", issuer, base)
        env = {**os.environ, "APIMCP_MCP_MAX_REQUESTS_PER_SESSION": str(max(32, args.connections))}
        command = [sys.executable, "-m", "apimcp.cli", "serve", str(config), "--port", str(port)]
        gateway = subprocess.Popen(["taskset", "-c", "0", *command], cwd=harness.ROOT, stdout=subprocess.DEVNULL,
                                   env=env)  # fmt: skip
        try:
            harness.wait_for_port(port, gateway, "apimcp serve")
            pool = tokens(key, issuer, f"{base}/mcp/jwt", POOL)
            one = {"Authorization": f"Bearer {pool[0]}"}
            for era in (MODERN, SESSION):
                scenarios = {
                    "open": Scenario(f"no inbound authentication, {era}"),
                    "one": Scenario(f"JWT, one token, {era}"),
                }
                if era == MODERN:  # a session belongs to its user: one session cannot take 20,000 users' tokens
                    scenarios["pool"] = Scenario(f"JWT, {POOL:,} tokens (every one verified), {era}")
                open_url, jwt_url = f"{base}/mcp/open", f"{base}/mcp/jwt"
                open_body, open_headers = request(open_url, era, {})
                jwt_body, jwt_headers = request(jwt_url, era, one)
                check(open_url, open_body, open_headers)
                check(jwt_url, jwt_body, jwt_headers)
                session_free = {k: v for k, v in jwt_headers.items() if k != "Authorization"}
                # harness.lua_script names its file after the body: each scenario writes in a folder of its own
                folders = {name: tmp / f"{era[:10]}-{name}" for name in scenarios}
                for folder in folders.values():
                    folder.mkdir()
                scripts = {
                    "open": (open_url, harness.lua_script(open_body, open_headers, folders["open"])),
                    "one": (jwt_url, harness.lua_script(jwt_body, jwt_headers, folders["one"])),
                }
                if "pool" in scenarios:
                    scripts["pool"] = (jwt_url, rotating_script(jwt_body, session_free, pool, folders["pool"]))
                for round_number in range(args.rounds):
                    turn = round_number % len(scripts)
                    order = list(scripts)[turn:] + list(scripts)[:turn]
                    for name in order:
                        url, script = scripts[name]
                        print(f"round {round_number + 1}: {scenarios[name].label}", flush=True)
                        scenarios[name].record(*harness.run_wrk(url, script, args.duration, args.connections))
                harness.print_table(
                    f"tools/call, {era}, {args.connections} connections, {args.rounds} x {args.duration}s, medians",
                    list(scenarios.values()),
                    scenarios["open"],
                )
        finally:
            harness.stop(gateway)
            harness.stop(issuer_process)
            harness.stop(nginx)


if __name__ == "__main__":
    main()
