"""Instructions per `tools/call`, counted by valgrind: a figure this noisy machine cannot blur.

Throughput benchmarks on a shared 2-core machine move by 10 to 20% from one run to the next, more than most single
changes to the request path are worth. The number of instructions a request executes barely moves at all, so
it tells whether a change makes the path cheaper, and by how much, before the wall-clock benchmarks confirm it.

Each mode's gateway (the app `apimcp serve` builds from a configuration file, called in process through ASGI
without a server in front: uvicorn's own cost is the same in every mode) serves `get_item` of
`bench/item_api.yaml` against nginx, N1 then N2 times in two processes under `valgrind --tool=cachegrind`;
instructions per request = (I(N2) - I(N1)) / (N2 - N1), so start-up and import costs cancel out. Spans go to
the local OTLP receiver of `telemetry_bench` (`bench/otlp_sink.py`), so encoding and sending them counts too.
`policy`, `filter` and `federated` are `features_bench`'s (50 rules none of which holds; an output filter; a tool
of an MCP server the gateway fronts, `bench.apps:engine` under uvicorn, whose own instructions are not counted).
Also counted, for the engine against the practical limit: the protocol engine serving one trivial tool and the
raw ASGI echo of `protocol_bench` (`bench/apps.py`).

    python -m bench.instructions_bench [--modes off,metrics,...] [--requests 200,1200] [--baseline DIR]

Needs valgrind (Debian: apt-get install valgrind). Instruction counts are not time: a cache miss costs no
instruction, so read them beside `telemetry_bench` and `gateway_bench`, not instead of them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import harness
from bench.gateway_bench import ITEM_SPEC, start_nginx
from bench.harness import THIS, Checkout

SINK = "{sink}"
MODES: dict[str, dict[str, str]] = {
    "off": {},
    "metrics": {"APIMCP_METRICS": "on", "APIMCP_METRICS_TOKEN": "bench"},
    "spans not sampled": {"OTEL_EXPORTER_OTLP_ENDPOINT": SINK, "OTEL_TRACES_SAMPLER": "always_off"},
    "spans": {"OTEL_EXPORTER_OTLP_ENDPOINT": SINK},
    "spans and metrics": {"OTEL_EXPORTER_OTLP_ENDPOINT": SINK, "APIMCP_METRICS": "on", "APIMCP_METRICS_TOKEN": "bench"},
    "spans of 10% and metrics": {
        "OTEL_EXPORTER_OTLP_ENDPOINT": SINK, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1", "APIMCP_METRICS": "on", "APIMCP_METRICS_TOKEN": "bench",
    },
    "policy": {},
    "filter": {},
    "federated": {},
    "engine": {},
    "raw echo": {},
}  # fmt: skip
"""Environment of each mode's process; `policy`, `filter` and `federated` are `features_bench`'s expositions."""
UPSTREAM = "{upstream}"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


# --- inside valgrind ------------------------------------------------------------------------------------------


def _scope(path: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    names = {"host": "127.0.0.1:8000", "content-type": "application/json", "content-length": str(len(body)),
             "accept": "application/json, text/event-stream", **{k.lower(): v for k, v in headers.items()}}  # fmt: skip
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in names.items()], "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }  # fmt: skip


async def _serve(app: Any, scope: dict[str, Any], body: bytes, count: int, expected: bytes) -> None:
    from apimcp.servers.lifecycle import settle_memory  # noqa: PLC0415

    settle_memory()  # the collector as `apimcp serve` sets it, for every mode
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    for _ in range(count):
        sent.clear()
        await app(dict(scope), receive, send)
        if expected not in sent[-1].get("body", b""):
            raise SystemExit(f"unexpected answer: {sent}")


def inner(mode: str, count: int, backend: str) -> None:
    """Serve `count` requests of `mode` in this process (run under valgrind by `count_instructions`)."""
    import orjson  # noqa: PLC0415 - imported in the measured process only

    if mode in ("engine", "raw echo"):
        from bench import apps  # noqa: PLC0415

        body, headers = harness.modern_request("tools/call", {"name": "greet", "arguments": {"name": "wrk"}}, "greet")
        app = apps.engine if mode == "engine" else apps.raw_echo
        raw = orjson.dumps(body)
        asyncio.run(_serve(app, _scope("/", headers, raw), raw, count, b"Hello, wrk!"))
        return

    from apimcp.backends.rest import close_session, new_session  # noqa: PLC0415
    from apimcp.gateway.config import parse_config  # noqa: PLC0415
    from apimcp.gateway.declared import build_gateway  # noqa: PLC0415
    from apimcp.gateway.plan import plan_gateway  # noqa: PLC0415
    from apimcp.telemetry import active  # noqa: PLC0415

    active.install(active.Telemetry.from_environment(os.environ))
    config, call, expected = _gateway(mode, backend)
    body, headers = harness.modern_request("tools/call", call, str(call["name"]))
    raw = orjson.dumps(body)

    async def main() -> None:
        session = new_session()
        app = build_gateway(plan_gateway(parse_config(config, "bench", Path.cwd())), session)
        await _serve(app, _scope("/mcp/items", headers, raw), raw, count, expected)
        await close_session(session)

    asyncio.run(main())
    active.flush()


def _gateway(mode: str, backend: str) -> tuple[str, dict[str, object], bytes]:
    """The configuration of `mode`'s gateway (its one exposition is `items`), the call, and what its answer holds."""
    from bench.features_bench import FILTERS  # noqa: PLC0415
    from bench.governance_bench import RULES  # noqa: PLC0415

    item = {"name": "get_item", "arguments": {"itemId": 1}}
    if mode == "federated":
        upstream = os.environ["APIMCP_BENCH_UPSTREAM"]
        config = f"services:\n  items: {{mcp: '{upstream}'}}\nserver: {{fetch_allow: [127.0.0.1]}}\n"
        return config, {"name": "greet", "arguments": {"name": "wrk"}}, b"Hello, wrk!"
    if mode == "filter":  # the filters' file is written for a service named `shaped`
        shaped = f"services:\n  items: {{openapi: {ITEM_SPEC}, name: shaped, version: '1', backend: '{backend}'"
        return f"{shaped}, artifacts: [{FILTERS}]}}\n", item, b'"widget"'
    service = f"services:\n  items: {{openapi: {ITEM_SPEC}, name: item, version: '1', backend: '{backend}'}}\n"
    if mode == "policy":
        exposition = f"expositions:\n  items: {{services: [items], policies: {json.dumps(RULES)}}}\n"
        return service + exposition, item, b'"widget"'
    return service, item, b'"widget"'


# --- outside ----------------------------------------------------------------------------------------------------


def count_instructions(
    checkout: Checkout, mode: str, count: int, backend: str, sink: str, upstream: dict[str, str]
) -> int:
    env = {**os.environ, **{name: value.format(sink=sink) for name, value in MODES[mode].items()}, **upstream}
    command = [
        "valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
        checkout.python, "-m", "bench.instructions_bench", "--inner", mode, str(count), backend,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=harness.ROOT, env=env, capture_output=True, text=True, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{mode} ({count} requests) failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def per_request(
    checkout: Checkout, mode: str, counts: tuple[int, int], backend: str, sink: str, upstream: dict[str, str]
) -> float:
    with ThreadPoolExecutor(2) as pool:  # one valgrind per core; counts do not depend on the other's load
        low, high = pool.map(lambda n: count_instructions(checkout, mode, n, backend, sink, upstream), counts)
    return (high - low) / (counts[1] - counts[0])


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--inner":
        inner(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--requests", default="200,1200", help="N1,N2: requests of the two counted runs")
    parser.add_argument("--baseline", type=Path, help="another checkout (with its .venv) counted beside this one")
    args = parser.parse_args()
    modes = [mode.strip() for mode in args.modes.split(",")]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise SystemExit(f"unknown modes: {unknown}")
    low, high = (int(n) for n in args.requests.split(","))
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is required (Debian: apt-get install valgrind)")
    checkouts = [("this", THIS)] + ([("baseline", Checkout.at(args.baseline))] if args.baseline else [])
    figures: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as directory:
        nginx, nginx_port = start_nginx(Path(directory))
        sink_port = harness.free_port()
        sink = harness.start_pinned(1, [sys.executable, "-m", "bench.otlp_sink", str(sink_port)], sink_port, "sink")
        upstream_port = harness.free_port()
        upstream = harness.start_pinned(
            1, harness.uvicorn_command("bench.apps:engine", upstream_port), upstream_port, "the MCP upstream"
        )
        where = {"APIMCP_BENCH_UPSTREAM": f"http://127.0.0.1:{upstream_port}/mcp"}
        try:
            for mode in modes:
                for label, checkout in checkouts:
                    figures[label, mode] = per_request(
                        checkout, mode, (low, high), f"http://127.0.0.1:{nginx_port}", f"http://127.0.0.1:{sink_port}",
                        where,
                    )  # fmt: skip
                    print(f"{label}: {mode}: {figures[label, mode]:,.0f} instructions per request", flush=True)
        finally:
            for process in (upstream, sink, nginx):
                harness.stop(process)
    print(f"\ninstructions per tools/call, in process (requests {low} and {high})")
    header = f"{'mode':36} {'this':>12} {'vs off':>8}"
    if args.baseline:
        header += f" {'baseline':>12} {'vs off':>8} {'this/baseline':>14}"
    print(header)
    for mode in modes:
        line = f"{mode:36} {figures['this', mode]:>12,.0f} {_vs_off(figures, 'this', mode):>8}"
        if args.baseline:
            ratio = figures["this", mode] / figures["baseline", mode]
            line += f" {figures['baseline', mode]:>12,.0f} {_vs_off(figures, 'baseline', mode):>8} {ratio:>13.1%}"
        print(line)


def _vs_off(figures: dict[tuple[str, str], float], label: str, mode: str) -> str:
    """A gateway mode's count over the gateway off's (the engine's over the raw echo's)."""
    reference = "raw echo" if mode == "engine" else "off"
    if mode in ("off", "raw echo") or (label, reference) not in figures:
        return ""
    return f"{figures[label, mode] / figures[label, reference]:.1%}"


if __name__ == "__main__":
    main()
