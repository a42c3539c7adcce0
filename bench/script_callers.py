"""Clients that keep calling one tool in a loop, each waiting for its answer before the next call.

`bench/artifacts_bench.py` runs it pinned to CPU 1: with `--callers 1` for the latency of one call of
the scripted tool, with `--callers 10` as the scripted load beside wrk; `bench/stall_probe.py` runs it
as the attacker. Every answer is checked (HTTP 200, a JSON-RPC result, `isError` false for a tool call,
`--expect` in its text; with `--any-answer`, any JSON-RPC answer, errors and their HTTP statuses included, as an
attacker's are); failures are counted, not retried. `--method` and `--params` call another
method than tools/call (prompts/get, resources/read...).

It prints `ready` once every caller has had one good answer (those first calls are not counted), then
measures until `--duration` seconds have passed, or until SIGTERM/SIGINT when the duration is 0, and
prints one JSON line: calls, errors, the first error, seconds measured, p50 and p99 in ms.

    python -m bench.script_callers --url URL --tool NAME --arguments JSON [--callers 10] [--duration 0]
    python -m bench.script_callers --url URL --method prompts/get --params '{"name": "p"}'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import uvloop

from bench.harness import ACCEPT, MODERN_META, ROOT


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None

    def failed(self, message: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = message[:500]


@dataclass(frozen=True)
class Call:
    """What every caller sends: a method (tools/call by default) and its params; `name` is the Mcp-Name."""

    method: str
    params: dict[str, Any]
    name: str | None


async def call_once(
    session: aiohttp.ClientSession, url: str, call: Call, request_id: int, expect: str, any_answer: bool = False
) -> str | None:
    """None if the answer is right (with `any_answer`, if it is one), else what was wrong with it."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": call.method,
        "params": {**call.params, "_meta": MODERN_META},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": call.method,
        **({"Mcp-Name": call.name} if call.name is not None else {}),
    }
    try:
        async with session.post(url, data=orjson.dumps(body), headers=headers) as response:
            raw = await response.read()
            if response.status != 200 and not any_answer:
                return f"HTTP {response.status}: {raw[:300]!r}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return f"not JSON: {raw[:300]!r}"
    if any_answer and isinstance(answer, dict) and ("result" in answer or "error" in answer):
        return None
    result = answer.get("result") if isinstance(answer, dict) else None
    failed = not isinstance(result, dict) or (call.method == "tools/call" and result.get("isError") is not False)
    if failed or expect not in raw.decode():
        return f"unexpected answer: {raw[:300]!r}"
    return None


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    if args.method == "tools/call":
        call = Call("tools/call", {"name": args.tool, "arguments": json.loads(args.arguments)}, args.tool)
    else:
        call = Call(args.method, json.loads(args.params), args.tool)
    stop = asyncio.Event()
    if args.duration == 0:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    tally = Tally()
    ids = iter(range(1, 1 << 62))
    connector = aiohttp.TCPConnector(limit=args.callers)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # every caller's first call (connections opened, the gateway's script workers started) is not counted
        firsts = await asyncio.gather(
            *(call_once(session, args.url, call, next(ids), args.expect, args.any_answer) for _ in range(args.callers))
        )
        problems = [problem for problem in firsts if problem is not None]
        if problems:
            return {"calls": 0, "errors": len(problems), "first_error": problems[0], "seconds": 0.0}
        print("ready", flush=True)
        started = time.perf_counter()

        async def caller() -> None:
            while not stop.is_set():
                begun = time.perf_counter()
                problem = await call_once(session, args.url, call, next(ids), args.expect, args.any_answer)
                if problem is None:
                    tally.latencies.append((time.perf_counter() - begun) * 1000)
                else:
                    tally.failed(problem)

        tasks = [asyncio.create_task(caller()) for _ in range(args.callers)]
        if args.duration > 0:
            await asyncio.sleep(args.duration)
            stop.set()
        else:
            await stop.wait()
        await asyncio.gather(*tasks)  # each caller ends after its call in flight
        seconds = time.perf_counter() - started
    latencies = sorted(tally.latencies)
    summary: dict[str, Any] = {
        "calls": len(latencies),
        "errors": tally.errors,
        "first_error": tally.first_error,
        "seconds": seconds,
    }
    if len(latencies) >= 2:
        cuts = statistics.quantiles(latencies, n=100, method="inclusive")
        summary |= {"p50": statistics.median(latencies), "p99": cuts[98]}
    return summary


def start(url: str, given: Sequence[str], callers: int, duration: float, what: str) -> subprocess.Popen[str]:
    """These callers in another process on CPU 1 (`given`: --tool and --arguments, or --method and --params),
    once each has had its first good answer; read their summary with `summary`."""
    command = [
        "taskset", "-c", "1", sys.executable, "-m", "bench.script_callers", "--url", url, *given,
        f"--callers={callers}", f"--duration={duration}",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline().strip()
    if first != "ready":
        process.kill()
        raise SystemExit(f"{what} did not start: {first or process.wait()}")
    return process


def summary(process: subprocess.Popen[str], what: str, timeout: float = 60, least: int = 2) -> dict[str, Any]:
    """What the callers measured (waiting for them to finish); stops the benchmark if any call failed, or
    if fewer than `least` were made."""
    out, _ = process.communicate(timeout=timeout)
    measured: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    if measured["errors"] or measured["calls"] < least:
        raise SystemExit(f"{what} saw failed calls; figures would not be honest: {measured}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--tool", help="the tool called (the Mcp-Name header of another --method)")
    parser.add_argument("--arguments", default="{}", help="the tool's arguments, as JSON")
    parser.add_argument("--method", default="tools/call", help="another method, called with --params")
    parser.add_argument("--params", default="{}", help="the params of --method, as JSON")
    parser.add_argument("--expect", default="", help="text every good answer contains")
    parser.add_argument("--any-answer", action="store_true", help="an error answer counts as an answer")
    parser.add_argument("--callers", type=int, default=10)
    parser.add_argument("--duration", type=float, default=0, help="seconds; 0: until SIGTERM")
    args = parser.parse_args()
    uvloop.install()
    print(json.dumps(asyncio.run(measure(args))), flush=True)


if __name__ == "__main__":
    main()
