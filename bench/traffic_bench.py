"""What counting a request for the traffic screens costs a gateway that follows a control plane, in process: the
observer's two calls around a request and the timed backend around its backend call (`apimcp.traffic`), against
the same request path without them. Also what taking a minute's rows for a report costs.

    python -m bench.traffic_bench [--rounds 7] [--calls 100000]

Figures are medians over `--rounds` rounds of `--calls` requests each, in microseconds per request; both paths run
interleaved in each round. A real request costs the gateway some hundreds of microseconds (bench/gateway_bench.py):
the difference here is what traffic counting adds to it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Mapping
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Progress
from apimcp.catalog.model import Operation, RestBinding
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord
from apimcp.traffic.observer import TimedBackend, TrafficObserver
from apimcp.traffic.tally import TrafficTally

OPERATION = Operation("get_item", {"type": "object"}, RestBinding("GET", "/items/{id}"))
SOURCE = RequestSource()


class Answering(Backend):
    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        return {"status": 200}  # type: ignore[return-value]


async def _request(observer: TrafficObserver | None, backend: Backend, tool: str, number: int) -> None:
    """One request as the engine runs it, in its own task: observed around, calling its backend once."""
    if observer is not None:
        observer.request_started("tools/call", tool, SOURCE)
    await backend.call(OPERATION, {})
    if observer is not None:
        observer.request_finished(RequestRecord("tools/call", tool, number, None, "1", "success", None, 1.5, SOURCE))


async def _requests(calls: int, counted: bool, tools: int) -> float:
    tally = TrafficTally()
    observer = TrafficObserver(tally, "e1") if counted else None
    backend: Backend = TimedBackend(Answering()) if counted else Answering()
    started = time.perf_counter()
    for number in range(calls):
        await asyncio.create_task(_request(observer, backend, f"tool_{number % tools}", number))
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    plain, counted, many = [], [], []
    for _ in range(args.rounds):
        plain.append(asyncio.run(_requests(args.calls, False, 10)))
        counted.append(asyncio.run(_requests(args.calls, True, 10)))
        many.append(asyncio.run(_requests(args.calls, True, 1000)))
    tally = TrafficTally()
    for number in range(5000):
        tally.count("e1", "tools/call", f"tool_{number}", "success", 2.0, 1.0)
    started = time.perf_counter()
    rows = tally.take(1000)
    took = (time.perf_counter() - started) * 1000
    print(f"{'request path':<42} {'µs per request':>15}")
    print(f"{'without counting':<42} {statistics.median(plain):>15.2f}")
    print(f"{'counted (10 tools)':<42} {statistics.median(counted):>15.2f}")
    print(f"{'counted (1,000 tools)':<42} {statistics.median(many):>15.2f}")
    added = statistics.median(counted) - statistics.median(plain)
    print(f"counting adds {added:.2f} µs per request; taking {len(rows)} rows of 5,000 keys: {took:.1f} ms")


if __name__ == "__main__":
    main()
