"""Two control-plane replicas on one PostgreSQL, and a gateway told about both: a change made through either
reaches the gateway; when the replica it follows is killed, it follows the other and serves what changes
there, while a client calling tools all along sees no failure."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from apimcp.control.api.sync_routes import LONG_POLL_SECONDS
from tests.control.conftest import _postgres_schema
from tests.deployment.harness import ECHO_SPEC, wait_until
from tests.deployment.test_separate_processes import Traffic, _tools
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.processes import Background, cli, free_port


def _ok(*args: str, url: str) -> str:
    done = cli(*args, env={"APIMCP_URL": url})
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_a_gateway_fails_over_between_control_plane_replicas(tmp_path: Path) -> None:
    schema = _postgres_schema()
    database = next(schema)
    data = tmp_path / "control-plane"  # the replicas share its key file (or APIMCP_SECRET_KEYS)
    ports = [free_port(), free_port()]
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    started: list[Background] = []
    gateway: Background | None = None

    def replica(index: int) -> Background:
        args = ("control-plane", "--port", str(ports[index]), "--data-dir", str(data), "--database-url", database)
        process = Background(tmp_path / f"plane-{index}.log", *args)
        started.append(process)
        process.wait_for_http(f"{urls[index]}/api/v1/openapi.json")
        return process

    try:
        first = replica(0)  # migrates the schema; the second finds it migrated
        replica(1)
        token = (data / "bootstrap-token").read_text().strip()
        assert cli("login", urls[0], "--token", token).returncode == 0
        gateway_token = json.loads(_ok("token", "create", "edge", "--kind", "gateway", "-o", "json", url=urls[0]))
        key_file = tmp_path / "edge.pem"
        _ok("gateway-key", "create", "edge", "--out", str(key_file), url=urls[1])
        with live_aiohttp(echo_app) as echo:
            _ok("import", str(ECHO_SPEC), "--name", "echo", "--backend", f"{echo}/v1", "--include", "get_item",
                "--expose", "echo", url=urls[1])  # fmt: skip
            gateway_port = free_port()
            gateway = Background(
                tmp_path / "gateway.log",
                "gateway", "--control-plane", ",".join(urls), "--name", "edge-1", "--port", str(gateway_port),
                "--key-file", str(key_file),
                env={"APIMCP_GATEWAY_TOKEN": gateway_token["token"]},
            )  # fmt: skip
            endpoint = f"http://127.0.0.1:{gateway_port}/mcp/default/echo"
            gateway.wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz")
            wait_until(lambda: _tools(endpoint) == {"get_item"}, seconds=15)
            traffic = Traffic(endpoint)

            # A change through the replica the gateway does not follow reaches it (replicas poll the database), well
            # before the end of the 25 s long poll that would bring it otherwise.
            _ok("plan", "update", "default", "--include", "get_item", "--include", "delete_item", url=urls[1])
            wait_until(lambda: _tools(endpoint) == {"get_item", "delete_item"}, seconds=LONG_POLL_SECONDS / 2)

            # The followed replica dies: the gateway moves to the other and follows its changes.
            first.process.send_signal(signal.SIGKILL)
            first.process.wait(10)
            _ok("plan", "update", "default", "--include", "get_item", url=urls[1])
            wait_until(lambda: _tools(endpoint) == {"get_item"}, seconds=15)
            traffic.stop()
        assert traffic.failures == []
        assert traffic.answered > 20
        assert f"now following control plane {urls[1]}" in gateway.output()
    finally:
        if gateway is not None:
            gateway.stop()
        for process in started:
            process.stop()
        next(schema, None)


@pytest.mark.parametrize("given", [",", "http://10.0.0.1:8080,http://cp:8080"])
def test_every_control_plane_url_is_checked(given: str) -> None:
    result = cli("gateway", "--control-plane", given, "--token", "t")
    assert result.returncode == 2
