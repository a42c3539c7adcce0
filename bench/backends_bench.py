"""`tools/call` through the gateway to a GraphQL and a gRPC backend, side by side with direct calls.

For each backend, in every round:
- direct: a load generator calls the backend itself with the request the gateway would send (wrk
  for GraphQL over HTTP/1.1, h2load for gRPC over HTTP/2): the practical limit;
- gateway: wrk sends MCP `tools/call` (2026-07-28 stateless, and in a 2025-11-25 session) to
  `apimcp serve`, which calls the same backend.

The backends are the test suite's servers (tests/support: a graphql-core library API, a grpc.aio
shop), pinned to CPU 1 with the load generator; the gateway runs alone on CPU 0.

    python -m bench.backends_bench [--rounds 3] [--duration 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor_pb2 import FileDescriptorSet
from tests.support.graphql_server import SDL

from apimcp.catalog.model import GraphQLBinding
from apimcp.importers.graphql import import_graphql
from apimcp.importers.protobuf import compile_protos
from bench import harness
from bench.gateway_bench import apimcp_serve
from bench.harness import Scenario

SUPPORT = harness.ROOT / "tests" / "support"
PROTOS = SUPPORT / "protos"
SHOP_PROTO = PROTOS / "shop" / "v1" / "shop.proto"
BOOK_SELECTION = "{ id title genre pages author { name } }"
Measure = Callable[[], tuple[float, float, float]]
_H2LOAD_REQUESTS = re.compile(
    r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored"
)


def start_backend(module: str, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", module, "--port", str(port)]
    return harness.start_pinned(1, command, port, module)


def static_post_script(body: bytes, headers: dict[str, str], directory: Path) -> Path:
    """A wrk script posting the same body every time (a GraphQL request carries no id)."""
    lines = [
        'wrk.method = "POST"',
        f"wrk.body = {json.dumps(body.decode())}",
        *(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()),
    ]
    path = directory / "direct.lua"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_h2load(url: str, data: Path, duration: int, connections: int, directory: Path) -> tuple[float, float, float]:
    """Requests/s, p50 and p99 (ms) of gRPC calls made by h2load; stops on any failed request."""
    log = directory / "h2load.log"
    command = [
        "taskset", "-c", "1", "h2load", "-t1", f"-c{connections}", "-m1", f"-D{duration}", "--warm-up-time=1",
        f"--data={data}", "-H", "content-type: application/grpc", "-H", "te: trailers", f"--log-file={log}", url,
    ]  # fmt: skip
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    done = re.search(
        r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", output
    )
    if done is None or done.group(3) != "0" or done.group(4) != "0" or done.group(1) == "0":
        raise SystemExit(f"h2load saw failed requests; figures would not be honest:\n{output}")
    rps = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", output).group(1))  # type: ignore[union-attr]
    elapsed = sorted(int(line.split()[2]) / 1000 for line in log.read_text().splitlines() if line.strip())
    return rps, elapsed[len(elapsed) // 2], elapsed[int(len(elapsed) * 0.99)]


def grpc_frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message (uncompressed)."""
    return b"\0" + len(message).to_bytes(4, "big") + message


def gateway_measures(url: str, tool: str, arguments: dict[str, object], check: Callable[[object], None],
                     tmp: Path, args: argparse.Namespace) -> tuple[Measure, Measure]:  # fmt: skip
    """Measures of `tools/call` in both eras, after checking one answer of each."""
    call = {"name": tool, "arguments": arguments}
    modern_body, modern_headers = harness.modern_request("tools/call", call, name=tool)
    session_headers = harness.open_session(url)
    session_body: dict[str, object] = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    measures = []
    for body, headers in ((modern_body, modern_headers), (session_body, session_headers)):
        _, answer = harness.post(url, body, headers)
        result = answer.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise SystemExit(f"unexpected answer {answer}")
        check(result.get("structuredContent"))
        script = harness.lua_script(body, headers, tmp)
        measures.append(lambda s=script: harness.run_wrk(url, s, args.duration, args.connections))
    return measures[0], measures[1]


def graphql_round(args: argparse.Namespace, tmp: Path, scenarios: list[Scenario]) -> None:
    schema = tmp / "library.graphql"
    schema.write_text(SDL)
    service = import_graphql(str(schema), name="library", version="1", selections={"book": BOOK_SELECTION})
    binding = service.operation("book").binding  # type: ignore[union-attr]
    assert isinstance(binding, GraphQLBinding)
    backend_port, gateway_port = harness.free_port(), harness.free_port()
    backend = start_backend("tests.support.graphql_server", backend_port)
    endpoint = f"http://127.0.0.1:{backend_port}/graphql"
    config = tmp / "graphql.yaml"
    config.write_text(
        f"services:\n  library:\n    graphql: {schema}\n    name: library\n    version: '1'\n"
        f"    backend: {endpoint}\n    selections: {{book: '{BOOK_SELECTION}'}}\n"
    )
    gateway = apimcp_serve([str(config)], gateway_port, connections=args.connections)
    try:
        body = {"query": binding.document, "variables": {"id": "b1"}, "operationName": binding.operation_name}
        _, answer = harness.post(endpoint, body, {})
        if answer.get("data", {}).get("book", {}).get("id") != "b1":  # type: ignore[union-attr]
            raise SystemExit(f"unexpected GraphQL answer {answer}")
        direct_script = static_post_script(
            json.dumps(body).encode(), {"Content-Type": "application/json", "Accept": "application/json"}, tmp
        )

        def check(content: object) -> None:
            if not isinstance(content, dict) or content.get("book", {}).get("id") != "b1":
                raise SystemExit(f"unexpected tool result {content}")

        modern, session = gateway_measures(
            f"http://127.0.0.1:{gateway_port}/mcp/library", "book", {"id": "b1"}, check, tmp, args
        )
        measures = [lambda: harness.run_wrk(endpoint, direct_script, args.duration, args.connections), modern, session]
        run_round(scenarios, measures, args)
    finally:
        harness.stop(gateway)
        harness.stop(backend)


def grpc_round(args: argparse.Namespace, tmp: Path, scenarios: list[Scenario]) -> None:
    files = FileDescriptorSet.FromString(compile_protos([str(SHOP_PROTO)], [str(PROTOS)]))
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    request_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.v1.GetItemRequest"))
    data = tmp / "get-item.bin"
    data.write_bytes(grpc_frame(request_class(id="i1").SerializeToString()))
    backend_port, gateway_port = harness.free_port(), harness.free_port()
    backend = start_backend("tests.support.grpc_server", backend_port)
    config = tmp / "grpc.yaml"
    config.write_text(
        f"services:\n  shop:\n    grpc: {SHOP_PROTO}\n    include_paths: [{PROTOS}]\n"
        f"    backend: 127.0.0.1:{backend_port}\n"
    )
    gateway = apimcp_serve([str(config)], gateway_port, connections=args.connections)
    try:

        def check(content: object) -> None:
            if not isinstance(content, dict) or content.get("id") != "i1":
                raise SystemExit(f"unexpected tool result {content}")

        modern, session = gateway_measures(
            f"http://127.0.0.1:{gateway_port}/mcp/shop", "GetItem", {"id": "i1"}, check, tmp, args
        )
        url = f"http://127.0.0.1:{backend_port}/shop.v1.ShopService/GetItem"
        measures = [lambda: run_h2load(url, data, args.duration, args.connections, tmp), modern, session]
        run_round(scenarios, measures, args)
    finally:
        harness.stop(gateway)
        harness.stop(backend)


def run_round(scenarios: list[Scenario], measures: list[Measure], args: argparse.Namespace) -> None:
    for scenario, measure in zip(scenarios, measures, strict=True):
        if args.warmup:
            measure()
        scenario.record(*measure())
        print(f"  {scenario.label}: {scenario.rps[-1]:,.0f} req/s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1, help="1: one unmeasured run before each measure")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()
    harness.require_tools()
    if shutil.which("h2load") is None:
        raise SystemExit("h2load is required (Debian: apt-get install nghttp2-client)")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    graphql = [
        Scenario("GraphQL direct, wrk -> graphql-core server"),
        Scenario("GraphQL via apimcp, 2026-07-28 stateless"),
        Scenario("GraphQL via apimcp, 2025-11-25 session"),
    ]
    grpc = [
        Scenario("gRPC direct, h2load -> grpc.aio server"),
        Scenario("gRPC via apimcp, 2026-07-28 stateless"),
        Scenario("gRPC via apimcp, 2025-11-25 session"),
    ]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for round_number in range(1, args.rounds + 1):
            print(f"round {round_number}", file=sys.stderr)
            graphql_round(args, tmp, graphql)
            grpc_round(args, tmp, grpc)
    shape = f"{args.connections} connections, {args.rounds} x {args.duration}s, medians"
    harness.print_table(f"GraphQL tools/call ({shape})", graphql, graphql[0])
    harness.print_table(f"gRPC tools/call ({shape})", grpc, grpc[0])
    print(f"\nmedian p99 ratio gateway/direct: GraphQL {_p99(graphql)}, gRPC {_p99(grpc)}")


def _p99(scenarios: list[Scenario]) -> str:
    return f"{statistics.median(scenarios[1].p99) / statistics.median(scenarios[0].p99):.1f}x"


if __name__ == "__main__":
    main()
