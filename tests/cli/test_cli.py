"""The `apimcp` command line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx2
from typer.testing import CliRunner

from apimcp import __version__
from apimcp.cli.main import app


def test_version() -> None:
    result = CliRunner().invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == __version__


def test_help_lists_the_demo() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "demo" in result.output


def test_demo_serves_and_stops_on_interrupt() -> None:
    port = 18000 + os.getpid() % 2000
    process = subprocess.Popen(
        [sys.executable, "-m", "apimcp.cli", "demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://localhost:{port}/mcp/default/bookshelf"
        deadline = time.monotonic() + 15
        reply = None
        while time.monotonic() < deadline:
            try:
                reply = httpx2.post(
                    url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {"protocolVersion": "2025-06-18", "capabilities": {}},
                    },
                    headers={"accept": "application/json, text/event-stream"},
                )
                break
            except httpx2.ConnectError:
                time.sleep(0.1)
        assert reply is not None and reply.status_code == 200
        assert reply.json()["result"]["serverInfo"]["name"] == "bookshelf"
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode in (0, 130)  # 130: uvicorn re-raises the SIGINT it handled, as shells expect
    assert f"MCP endpoint http://localhost:{port}/mcp/default/bookshelf" in output
    assert '"url": "http://localhost:' in output
