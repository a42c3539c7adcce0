"""`apimcp control-plane`, `apimcp gateway` and the CLI as separate processes, as a team would run them.

The gateway keeps serving while the control plane is down and catches up when it
returns: a client calling tools all along sees no failure.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apimcp.control.api.sync_routes import LONG_POLL_SECONDS
from tests.deployment.harness import ECHO_SPEC, wait_until
from tests.gateway.echo_backend import create_app as echo_app
from tests.gateway.echo_backend import digest
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, cli, free_port

SECRET_VALUE = "s3cr3t-value-that-must-never-show"


class Traffic:
    """MCP calls to one endpoint in a loop, counting answers and failures, until stopped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answered = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with McpHttp(self.url) as mcp:
            while not self._stop.is_set():
                try:
                    reply = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": "x"}})
                    if reply.status == 200 and not reply.result.get("isError"):
                        self.answered += 1
                    else:
                        self.failures.append(f"{reply.status} {reply.body}")
                except Exception as exc:  # every failure counts
                    self.failures.append(repr(exc))
                time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@pytest.fixture
def backend() -> Iterator[str]:
    with live_aiohttp(echo_app) as url:
        yield f"{url}/v1"


def _tools(url: str) -> set[str]:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list")
        return {tool["name"] for tool in reply.result["tools"]} if reply.status == 200 else set()


def _ok(*args: str) -> str:
    done = cli(*args, env={"ECHO_KEY": SECRET_VALUE})
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout + done.stderr


def test_cli_control_plane_and_gateway_apart(tmp_path: Path, backend: str) -> None:
    plane_port, gateway_port = free_port(), free_port()
    plane_url = f"http://127.0.0.1:{plane_port}"
    data = tmp_path / "control-plane"
    plane = Background(tmp_path / "plane-1.log", "control-plane", "--port", str(plane_port), "--data-dir", str(data))
    gateway: Background | None = None
    outputs: list[str] = []
    try:
        plane.wait_for_http(f"{plane_url}/api/v1/openapi.json")
        token = (data / "bootstrap-token").read_text().strip()
        outputs.append(_ok("login", plane_url, "--token", token))
        gateway_token = json.loads(_ok("token", "create", "edge", "--kind", "gateway", "-o", "json"))["token"]
        key_file = tmp_path / "edge.pem"
        outputs.append(_ok("gateway-key", "create", "edge", "--out", str(key_file)))
        outputs.append(
            _ok(
                "secret",
                "create",
                "echo-key",
                "--kind",
                "api_key",
                "--field",
                "name=X-Echo-Key",
                "--value-env",
                "value=ECHO_KEY",
            )
        )
        outputs.append(
            _ok(
                "import",
                str(ECHO_SPEC),
                "--name",
                "echo",
                "--backend",
                backend,
                "--include",
                "get_item",
                "--include",
                "secured",
                "--expose",
                "echo",
            )
        )
        outputs.append(_ok("plan", "update", "default", "--secret", "echo-key"))

        gateway = Background(
            tmp_path / "gateway.log",
            "gateway",
            "--control-plane",
            plane_url,
            "--name",
            "edge-1",
            "--port",
            str(gateway_port),
            "--key-file",
            str(key_file),
            env={"APIMCP_GATEWAY_TOKEN": gateway_token},
        )
        endpoint = f"http://127.0.0.1:{gateway_port}/mcp/default/echo"
        gateway.wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz")
        wait_until(lambda: _tools(endpoint) == {"get_item", "secured"}, seconds=10)
        with McpHttp(endpoint) as mcp:
            sent = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result["structuredContent"]
            assert sent["header_digests"]["X-Echo-Key"] == digest(SECRET_VALUE)  # the secret reached the backend call
            assert sent["headers"]["X-Echo-Key"] == "***"  # and the client sees the backend's echo of it masked

        traffic = Traffic(endpoint)
        # A change made with the CLI is served by the running gateway, woken at once: well before its 25 s long poll
        # would have ended.
        outputs.append(_ok("plan", "update", "default", "--include", "get_item", "--include", "delete_item"))
        wait_until(lambda: _tools(endpoint) == {"get_item", "delete_item"}, seconds=LONG_POLL_SECONDS / 2)

        # The control plane goes away: the gateway keeps serving; the CLI says what is wrong.
        assert plane.stop() in (0, 130)
        time.sleep(1.0)
        unreachable = cli("gateway", "list")
        assert unreachable.returncode == 1
        assert f"cannot reach the control plane at {plane_url}" in unreachable.stderr
        assert _tools(endpoint) == {"get_item", "delete_item"}

        # It comes back (same database): the gateway resyncs and serves what changed meanwhile.
        plane = Background(
            tmp_path / "plane-2.log", "control-plane", "--port", str(plane_port), "--data-dir", str(data)
        )
        plane.wait_for_http(f"{plane_url}/api/v1/openapi.json")
        outputs.append(_ok("plan", "update", "default", "--include", "get_item"))
        wait_until(lambda: _tools(endpoint) == {"get_item"}, seconds=10)
        traffic.stop()
        assert traffic.failures == []
        assert traffic.answered > 20

        listed = json.loads(_ok("gateway", "list", "-o", "json"))
        assert [g["name"] for g in listed] == ["edge-1"]
        outputs.append(_ok("secret", "list"))
        outputs.append(_ok("expo", "list"))
    finally:
        if gateway is not None:
            gateway.stop()
        plane.stop()
    logs = [path.read_text() for path in tmp_path.glob("*.log")]
    assert len(logs) == 3
    for text in [*outputs, *logs]:
        assert SECRET_VALUE not in text
    assert "echo-key" in outputs[-2]  # the secret list shows metadata
