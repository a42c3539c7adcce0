"""The `apimcp` command line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import typer
import typer.main
from typer.testing import CliRunner

from apimcp import __version__
from apimcp.cli.main import app


def test_version() -> None:
    result = CliRunner().invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == __version__


def _command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in getattr(command, "commands", {}).items():
        yield from _command_paths(sub, (*path, name))


def test_every_command_has_help_text_and_readable_value_names() -> None:
    """Finding: `<list[str]>` and `<bool>` (even beside --help) in the help; plan show, expo show, token list and
    gateway-group list and delete had no help text."""
    paths = list(_command_paths(typer.main.get_command(app)))
    assert len(paths) > 50
    helps = {path: CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}) for path in paths}
    for path, shown in helps.items():
        assert shown.exit_code == 0, (path, shown.output)
        assert "<list[" not in shown.output and "<bool>" not in shown.output, (path, shown.output)
        usage, _, rest = shown.output.strip().partition("\n")
        assert usage.startswith("Usage:") and rest.strip() and not rest.strip().startswith("╭"), (path, shown.output)
        if path:  # and the list of its parent's commands says what it does
            listed = helps[path[:-1]].output.splitlines()
            line = next(line for line in listed if re.match(rf"^│ {re.escape(path[-1])} ", line))
            assert line.strip("│ ").removeprefix(path[-1]).strip(), (path, line)


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
