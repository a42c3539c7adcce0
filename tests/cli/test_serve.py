"""`apimcp serve`: a configuration file or a one-liner, and clear errors before anything starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import typer
from typer.testing import CliRunner

from apimcp.cli.main import app
from apimcp.cli.server_commands import endpoint_options
from apimcp.demo_api import create_app, spec_path
from apimcp.settings import Settings
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import free_port


@pytest.fixture(scope="module")
def bookshelf_api() -> Iterator[str]:
    with live_aiohttp(create_app) as url:
        yield url


def _serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "apimcp.cli", "serve", *args, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"apimcp serve exited: {process.communicate()[0]}")
        try:
            httpx2.get(f"http://localhost:{port}/healthz", timeout=1)
            return process, port
        except httpx2.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("apimcp serve did not start")


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=15)
    return output


def test_one_liner_serves_a_description(bookshelf_api: str) -> None:
    process, port = _serve("--openapi", str(spec_path()), "--backend", bookshelf_api, "--include", "tag:books")
    try:
        index = httpx2.get(f"http://localhost:{port}/").json()
        assert index == {"status": "ok", "revision": 0, "expositions": 1}
        with McpHttp(f"http://localhost:{port}/mcp/bookshelf") as mcp:
            tools = {t["name"] for t in mcp.modern("tools/list").result["tools"]}
            assert "list_books" in tools and "get_author" not in tools  # tag:books only
            result = mcp.modern("tools/call", {"name": "get_book", "arguments": {"bookId": 1}}).result
            assert result["structuredContent"]["id"] == 1
        missing = httpx2.post(f"http://localhost:{port}/mcp/nope", json={})
        assert missing.status_code == 404 and missing.json() == {"error": "No exposition at /mcp/nope"}
    finally:
        output = _stop(process)
    assert f"MCP endpoint http://localhost:{port}/mcp/bookshelf" in output


def test_config_file(bookshelf_api: str, tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        f"""
services:
  shelf:
    openapi: {spec_path()}
    backend: {bookshelf_api}
    tool_prefix: shelf_
expositions:
  library:
    services: [shelf]
    cache: {{tools/list: {{ttl_ms: 5000, scope: public}}}}
"""
    )
    process, port = _serve(str(config))
    try:
        with McpHttp(f"http://localhost:{port}/mcp/library") as mcp:
            listed = mcp.modern("tools/list").result
            assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "public")
            assert all(t["name"].startswith("shelf_") for t in listed["tools"])
            session = mcp.initialize("2025-06-18")
            stats = session.request("tools/call", {"name": "shelf_get_stats", "arguments": {}})
            assert "books" in stats.result["content"][0]["text"]
    finally:
        _stop(process)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cfg.yaml", "--openapi", "x.yaml"], "give a configuration file or --openapi, not both"),
        (["--backend", "http://x"], "--backend, --name, --include and --exclude go with --openapi"),
        (["--openapi", "missing.yaml"], "missing.yaml: could not read it"),
        (
            ["--openapi", str(spec_path()), "--backend", "ftp://x"],
            "the backend endpoint must be an http:// or https:// URL",
        ),
        (["--openapi", str(spec_path()), "--include", "nothing*"], "--include: 'nothing*' selects no operation"),
        (["no-such-config.yaml"], "cannot read the configuration"),
    ],
)
def test_errors_before_starting(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2
    assert message in result.output


def _reachable_when_printed(command: list[str], announced: str, port: int) -> str:
    """Run `apimcp COMMAND`; the moment a line containing `announced` is printed, freeze the process (SIGSTOP)
    and connect to `port`: a port that listens takes the connection in its backlog while the server is frozen,
    one that does not yet refuses it. The line printed is returned."""
    process = subprocess.Popen(
        [sys.executable, "-m", "apimcp.cli", *command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    watchdog = threading.Timer(120, process.kill)  # a server that never prints ends the test, not the suite
    watchdog.start()
    seen = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if announced in line:
                os.kill(process.pid, signal.SIGSTOP)
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=30).close()  # refused: printed too early
                finally:
                    os.kill(process.pid, signal.SIGCONT)
                return line
        raise AssertionError(f"never printed {announced!r}:\n{''.join(seen)}")
    finally:
        watchdog.cancel()
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


@pytest.mark.parametrize("command", ["serve", "demo", "control-plane"])
def test_serve_and_demo_print_the_url_only_once_the_port_listens(command: str, bookshelf_api: str) -> None:
    port = free_port()
    arguments = {
        "serve": ["serve", "--openapi", str(spec_path()), "--backend", bookshelf_api],
        "demo": ["demo"],
        "control-plane": ["control-plane"],
    }[command]
    line = _reachable_when_printed(
        [*arguments, "--port", str(port)], "control plane on" if command == "control-plane" else "MCP endpoint", port
    )
    assert f"localhost:{port}" in line


def test_a_request_state_key_variable_too_short_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """`apimcp gateway` let the engine's ValueError through as a traceback."""
    monkeypatch.setenv("APIMCP_REQUEST_STATE_KEYS", "short")
    with pytest.raises(typer.Exit) as stopped:
        endpoint_options([], Settings())
    assert stopped.value.exit_code == 2


@pytest.mark.parametrize(
    ("option", "variable", "statuses"),
    [
        ([], "", [200, 429]),  # one anonymous caller, the peer 127.0.0.1, whatever the header says
        (["--forwarded-allow-ips", "127.0.0.1"], "", [200, 200]),  # two callers, as the proxy named says
        ([], "127.0.0.0/8", [200, 200]),
        (["--forwarded-allow-ips", ""], "127.0.0.1", [200, 429]),  # the option wins: no one
    ],
)
def test_forwarded_headers_are_believed_only_from_the_proxies_named(
    option: list[str], variable: str, statuses: list[int], bookshelf_api: str, tmp_path: Path
) -> None:
    """Issue 21, L1: uvicorn believed X-Forwarded-For from 127.0.0.1, so any local process chose the address an
    anonymous caller is rate limited (and audited) as."""
    config = tmp_path / "gateway.yaml"
    config.write_text(f"""
services:
  shelf: {{openapi: {spec_path()}, backend: "{bookshelf_api}"}}
expositions:
  library: {{services: [shelf], rate_limit: {{caller: 1/min}}}}
""")
    process, port = _serve(str(config), *option, env={"APIMCP_FORWARDED_ALLOW_IPS": variable})
    try:
        with McpHttp(f"http://127.0.0.1:{port}/mcp/library") as mcp:
            answers = [mcp.modern("tools/list", headers={"x-forwarded-for": f"203.0.113.{n}"}) for n in (9, 10)]
    finally:
        _stop(process)
    assert [answer.status for answer in answers] == statuses


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--openapi", "x.yaml"],
        ["control-plane"],
        ["gateway", "--control-plane", "http://127.0.0.1:1", "--token", "t"],
        ["demo"],
    ],
)
def test_a_wrong_proxy_address_is_a_usage_error_naming_the_option(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--forwarded-allow-ips", "10.0.0.1,proxy.internal"])
    assert result.exit_code == 2, result.output
    assert "--forwarded-allow-ips: 'proxy.internal' is not an IP address or a CIDR network" in result.output


def test_a_configuration_file_not_in_utf8_or_too_large_is_an_error_line(tmp_path: Path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("services:\n  caf\xe9: {openapi: x.yaml}\n".encode("latin-1"))
    result = CliRunner().invoke(app, ["serve", str(latin)])
    assert result.exit_code == 2 and "it is not UTF-8 (byte 15)" in result.output  # not a traceback
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"#" * (16 * 2**20 + 1))
    result = CliRunner().invoke(app, ["serve", str(huge)])
    assert result.exit_code == 2 and "the configuration is larger than 16777216 bytes" in result.output
