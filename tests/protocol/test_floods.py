"""Floods found by probing the server as an attacker would, replayed against a server process of its own.

Each test resets the process's peak resident memory, floods it, and asserts that
the peak (VmHWM) and what stays resident (VmRSS) grew by a bounded amount — far
below what the same flood cost before the limits — and that the server still
answers normally afterwards.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx2
import orjson
import pytest

from tests.support.mcp_http import McpHttp
from tests.support.processes import free_port

MIB = 1024 * 1024
SESSIONS_PER_ENDPOINT = 300
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class FloodServer:
    process: subprocess.Popen[bytes]
    url: str

    def memory(self, field: str) -> int:
        """VmRSS or VmHWM of the server process, in bytes."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no {field} in /proc/{self.process.pid}/status")

    def growth(self, flood: Callable[[], None]) -> tuple[int, int]:
        """How much (peak, resident) memory grew while `flood` ran."""
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")  # the peak restarts from now
        before = self.memory("VmRSS")
        flood()
        return self.memory("VmHWM") - before, self.memory("VmRSS") - before

    def answers_normally(self) -> None:
        with McpHttp(self.url) as mcp:
            assert mcp.modern("tools/call", {"name": "echo", "arguments": {"text": "still here"}}).status == 200
            reply = mcp.request("tools/list", {}, {"mcp-session-id": "unknown"})
            assert reply.status == 404


@pytest.fixture(scope="module")
def server() -> Iterator[FloodServer]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.protocol.flood_server", str(port), str(SESSIONS_PER_ENDPOINT)], cwd=ROOT
    )
    url = f"http://localhost:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the flood server did not start"
            try:
                if httpx2.get(url, timeout=1).status_code:
                    break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the flood server did not answer"
                time.sleep(0.05)
        with McpHttp(url) as warm:  # first-use allocations are not the flood's
            for version in ("2025-03-26", "2025-11-25"):
                warm.initialize(version).request("tools/list")
            warm.modern("tools/list")
        yield FloodServer(process, url)
    finally:
        process.terminate()
        process.wait(10)


def in_parallel(count: int, task: Callable[[int], None], workers: int = 4) -> None:
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(task, range(count)))


def test_200_initializes_with_a_megabyte_of_capabilities_leave_memory_bounded(server: FloodServer) -> None:
    # Before: each became a session living an hour: +207 MiB measured.
    pad = "x" * MIB
    statuses: list[int] = []

    def flood() -> None:
        with McpHttp(server.url) as mcp:

            def initialize(i: int) -> None:
                params = {"protocolVersion": "2025-11-25", "capabilities": {"experimental": {"pad": pad}}}
                statuses.append(mcp.request("initialize", params).status)

            in_parallel(200, initialize)

    peak, resident = server.growth(flood)
    assert set(statuses) == {400}
    assert peak < 60 * MIB and resident < 20 * MIB, (peak, resident)
    server.answers_normally()


def test_sessions_with_the_largest_records_allowed_fill_their_cap_and_no_more(server: FloodServer) -> None:
    # The largest record a client may leave: 16 KiB of tiny keys, which would weigh some 300 KiB parsed.
    tiny_keys = {f"k{i:04x}": {} for i in range(1400)}
    assert 15_000 < len(orjson.dumps(tiny_keys)) < 16_384
    statuses: list[int] = []
    opened: list[str] = []

    def flood() -> None:
        with McpHttp(server.url) as mcp:

            def initialize(i: int) -> None:
                params = {"protocolVersion": "2025-11-25", "capabilities": {"experimental": tiny_keys}}
                reply = mcp.request("initialize", params)
                statuses.append(reply.status)
                if reply.status == 200:
                    opened.append(reply.headers["mcp-session-id"])

            in_parallel(SESSIONS_PER_ENDPOINT + 50, initialize)

    peak, resident = server.growth(flood)
    assert statuses.count(200) <= SESSIONS_PER_ENDPOINT and statuses.count(503) >= 50
    assert resident < SESSIONS_PER_ENDPOINT * 20 * 1024 + 10 * MIB, resident
    assert peak < 60 * MIB, peak
    server.answers_normally()
    with httpx2.Client(timeout=10) as client:
        for session_id in opened:  # their room is free again for the other tests
            assert client.delete(server.url, headers={"mcp-session-id": session_id}).status_code == 200


def test_batches_of_74000_tools_list_requests_leave_memory_bounded(server: FloodServer) -> None:
    # Before: one such batch built a response of several hundred megabytes (peak +412 MiB measured).
    batch = orjson.dumps([{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(74_000)])
    assert len(batch) < 4 * MIB

    def flood() -> None:
        with McpHttp(server.url) as mcp:
            session = mcp.initialize("2025-03-26")
            for _ in range(5):
                assert mcp.post(None, session.headers(), raw=batch).status == 400

    peak, resident = server.growth(flood)
    # One batch is parsed (under 4 MiB of body) before it is refused; the allocator keeps some of that.
    assert peak < 150 * MIB and resident < 80 * MIB, (peak, resident)
    server.answers_normally()


def test_heads_of_ten_megabytes_are_cut_off_before_the_app_leaving_memory_bounded(server: FloodServer) -> None:
    # Before: uvicorn with httptools buffered any header, whatever its size (peak +148 MiB measured).
    host, port = server.url.removeprefix("http://").split("/")[0].split(":")
    head = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Flood: " + b"a" * (10 * MIB) + b"\r\n\r\n"
    answers: list[bytes] = []

    def send(i: int) -> None:
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            with contextlib.suppress(OSError):  # the server stopped reading and closed: that is the point
                sock.sendall(head)
            try:
                answers.append(sock.recv(100))
            except OSError:
                answers.append(b"")

    peak, resident = server.growth(lambda: in_parallel(20, send))
    assert any(a.startswith(b"HTTP/1.1 431 ") for a in answers), answers[:3]
    assert peak < 30 * MIB and resident < 10 * MIB, (peak, resident)
    server.answers_normally()
