"""`apimcp serve CONFIG --workers 2`: two processes serve one port, sharing sessions through Redis; a worker
that dies is replaced; SIGTERM stops them all gracefully; without a shared state the option is refused."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deployment.test_replicas import forget_prefix, shared_state_env
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.gateway.test_large_answers import SPEC as ANSWERS_SPEC
from tests.gateway.test_large_answers import answers_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, cli, free_port


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    with live_aiohttp(echo_app) as echo:
        path = tmp_path / "gateway.yaml"
        path.write_text(f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n')
        yield path


def _workers(pid: int) -> set[int]:
    children: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        children |= {int(child) for child in (task / "children").read_text().split()}
    return children


def _wait_for(condition: object, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("the condition did not hold in time")


def test_two_workers_share_one_port_and_sessions(config: Path, tmp_path: Path) -> None:
    env, prefix = shared_state_env()
    port = free_port()
    server = Background(tmp_path / "workers.log", "serve", str(config), "--port", str(port), "--workers", "2", env=env)
    try:
        server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
        _wait_for(lambda: len(_workers(server.process.pid)) == 2)
        first = _workers(server.process.pid)
        with McpHttp(f"http://127.0.0.1:{port}/mcp/echo") as mcp:
            session = mcp.initialize()
            call = {"name": "get_item", "arguments": {"itemId": "1"}}
            for _ in range(20):  # new connections: the kernel hands them to either worker
                mcp.http.close()
                mcp.http = type(mcp.http)(timeout=10)
                assert session.request("tools/call", call).status == 200
            victim = min(first)
            os.kill(victim, signal.SIGKILL)
            _wait_for(lambda: len(_workers(server.process.pid)) == 2 and victim not in _workers(server.process.pid))
            assert session.request("tools/call", call).status == 200  # the session outlived its worker
        assert "starting another" in server.output()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(30) == 0
    finally:
        server.stop()
        forget_prefix(prefix)


def test_workers_need_a_shared_state(config: Path) -> None:
    result = cli("serve", str(config), "--workers", "2", env={"APIMCP_STATE_URL": ""})
    assert result.returncode == 2
    assert "--workers above 1 needs a shared state" in result.stderr
    embedded = cli("serve", "--workers", "2")
    assert embedded.returncode == 2
    assert "apimcp gateway --workers N" in embedded.stderr


def _shaping_processes(pid: int) -> set[int]:
    """The shaping processes among `pid`'s children."""
    found = set()
    for child in _workers(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except FileNotFoundError:
            continue
        if b"apimcp.shaping.child" in command:
            found.add(child)
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_each_worker_owns_its_shaping_processes_and_none_outlives_the_gateway(tmp_path: Path) -> None:
    env, prefix = shared_state_env()
    port = free_port()
    spec = tmp_path / "answers.yaml"
    spec.write_text(ANSWERS_SPEC)
    with live_aiohttp(answers_app) as answers:
        config = tmp_path / "gateway.yaml"
        config.write_text(
            f'services:\n  answers: {{openapi: {spec}, backend: "{answers}", max_response_bytes: 4194304}}\n'
        )
        server = Background(
            tmp_path / "workers.log", "serve", str(config), "--port", str(port), "--workers", "2", env=env
        )
        try:
            server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
            _wait_for(lambda: len(_workers(server.process.pid)) == 2)
            with McpHttp(f"http://127.0.0.1:{port}/mcp/answers") as mcp:
                for _ in range(12):  # new connections: the kernel hands them to either worker
                    mcp.http.close()
                    mcp.http = type(mcp.http)(timeout=30)
                    reply = mcp.modern("tools/call", {"name": "get_checked", "arguments": {"kind": "compact"}})
                    assert reply.status == 200 and reply.result["isError"] is False
            workers = _workers(server.process.pid)
            owned = {worker: _shaping_processes(worker) for worker in workers}
            shaping = set().union(*owned.values())
            assert shaping, "no worker started a shaping process"
            assert not _shaping_processes(server.process.pid)  # the supervisor forks workers, and shapes nothing
            victim = next(worker for worker, children in owned.items() if children)
            os.kill(victim, signal.SIGKILL)  # its shaping processes end with their input
            _wait_for(lambda: all(_gone(child) for child in owned[victim]))
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(30) == 0
            _wait_for(lambda: all(_gone(child) for child in shaping))
        finally:
            server.stop()
            forget_prefix(prefix)


def _established(pid: int, port: int) -> int:
    """How many established TCP connections to `port` the process `pid` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01" and fields[9] in inodes:  # 01: ESTABLISHED
                count += 1
    return count


def test_connections_are_spread_over_the_workers(config: Path, tmp_path: Path) -> None:
    """Each worker listens on the port with its own socket: 32 connections opened one after another do not all go
    to one worker (with the socket they all shared, the worker that woke first took every one)."""
    env, prefix = shared_state_env()
    port = free_port()
    server = Background(tmp_path / "workers.log", "serve", str(config), "--port", str(port), "--workers", "2", env=env)
    opened: list[socket.socket] = []
    try:
        server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
        _wait_for(lambda: len(_workers(server.process.pid)) == 2)
        opened = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(32)]
        workers = _workers(server.process.pid)
        _wait_for(lambda: sum(_established(worker, port) for worker in workers) == 32)
        held = sorted(_established(worker, port) for worker in workers)
        assert held[0] >= 4, held  # spread by the connections' addresses: fewer than 4 is 3 chances in a million
    finally:
        for sock in opened:
            sock.close()
        server.stop()
        forget_prefix(prefix)
