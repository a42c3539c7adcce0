"""Rate limits set on a plan through the REST API and the CLI reach the gateway, which answers 429 with
Retry-After beyond them; a bad limit is refused naming the field; replicas on one Redis share the buckets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.deployment.test_replicas import forget_prefix, shared_state_env
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, free_port

CALL = {"name": "get_item", "arguments": {"itemId": "1"}}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        yield running


def _statuses(url: str, count: int) -> list[int]:
    with McpHttp(url) as mcp:
        return [mcp.modern("tools/call", CALL).status for _ in range(count)]


def test_a_plan_s_rate_limit_is_enforced_and_set_by_the_cli(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", rate_limit={"exposition": "2/min"})
    assert plan["rate_limit"] == {"exposition": {"requests": 2, "per_seconds": 60.0, "burst": 2}}
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: live.served("/mcp/default/echo"))
    assert _statuses(url, 3)[-1] == 429  # served() above spent one of the two

    refused = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"rate_limit": {"exposition": "2/fortnight"}})
    assert "rate_limit.exposition" in json.dumps(refused)

    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    done = runner.invoke(app, ["plan", "update", "echo", "--rate-limit", "", "--caller-rate-limit", "5/min,burst=1"])
    assert done.exit_code == 0, done.output
    shown = json.loads(runner.invoke(app, ["plan", "show", "echo", "-o", "json"]).output)
    assert shown["rate_limit"] == {"caller": {"requests": 5, "per_seconds": 60.0, "burst": 1}}
    wait_until(lambda: _statuses(url, 1) == [200])  # the new limits are served: a full bucket of one
    assert _statuses(url, 1) == [429]
    bad = runner.invoke(app, ["plan", "update", "echo", "--rate-limit", "lots"])
    assert bad.exit_code == 2 and "--rate-limit: 'lots' is not a rate" in bad.output


def test_replicas_on_one_redis_share_the_limit(tmp_path: Path) -> None:
    env, prefix = shared_state_env()
    with live_aiohttp(echo_app) as echo:
        config = tmp_path / "gateway.yaml"
        limited = "expositions:\n  echo:\n    services: [echo]\n    rate_limit: {exposition: 4/min}\n"
        config.write_text(f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n' + limited)
        ports = [free_port(), free_port()]
        running = [Background(tmp_path / f"g{i}.log", "serve", str(config), "--port", str(port), env=env)
                   for i, port in enumerate(ports)]  # fmt: skip
        try:
            for process, port in zip(running, ports, strict=True):
                process.wait_for_http(f"http://127.0.0.1:{port}/healthz")
            urls = [f"http://127.0.0.1:{port}/mcp/echo" for port in ports]
            assert _statuses(urls[0], 2) + _statuses(urls[1], 2) == [200] * 4
            assert _statuses(urls[0], 1) + _statuses(urls[1], 1) == [429, 429]
            assert httpx2.get(f"http://127.0.0.1:{ports[0]}/healthz").status_code == 200  # only MCP is limited
        finally:
            for process in running:
                process.stop()
            forget_prefix(prefix)
