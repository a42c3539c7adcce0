"""A Redis of the test's own (no persistence) restarted under two gateways: while it is away, session-era
requests are answered 503 with a clear message and stateless ones carry on; once it is back, the gateways
reconnect by themselves, say in their logs what was lost, and clients that initialize again are served."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deployment.test_replicas import shared_state_env
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, free_port

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class OwnRedis:
    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, check=False)
            if done.stdout.strip() == b"PONG":
                return
            time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def redis() -> Iterator[OwnRedis]:
    own = OwnRedis(free_port())
    own.start()
    yield own
    own.kill()


def _until(check: object, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.1)


def test_gateways_ride_out_a_redis_restart_and_say_what_was_lost(redis: OwnRedis, tmp_path: Path) -> None:
    env, _ = shared_state_env()
    env["APIMCP_STATE_URL"] = redis.url
    call = {"name": "get_item", "arguments": {"itemId": "3"}}
    with live_aiohttp(echo_app) as echo:
        config = tmp_path / "gateway.yaml"
        config.write_text(f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n')
        ports = [free_port(), free_port()]
        gateways = [
            Background(tmp_path / f"gateway-{i}.log", "serve", str(config), "--port", str(port), env=env)
            for i, port in enumerate(ports)
        ]
        try:
            for gateway, port in zip(gateways, ports, strict=True):
                gateway.wait_for_http(f"http://127.0.0.1:{port}/healthz")
            urls = [f"http://127.0.0.1:{port}/mcp/echo" for port in ports]
            with McpHttp(urls[0]) as first, McpHttp(urls[1]) as second:
                session = first.initialize()
                assert second.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
                                   session.headers()).status == 200  # fmt: skip

                redis.kill()
                replies = []  # a copy of the record serves the session for up to a second more

                def refused() -> bool:
                    replies.append(session.request("tools/call", call))
                    return replies[-1].status != 200

                _until(refused)
                away = replies[-1]
                assert away.status == 503 and away.headers["retry-after"] == "1"
                assert "session store is unavailable" in away.error["message"]
                assert second.modern("tools/call", call).status == 200  # stateless clients do not need it

                redis.start()  # empty: it kept nothing
                _until(lambda: session.request("ping").status == 404)  # reconnected; the session is gone
                again = second.initialize()
                assert first.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
                                  again.headers()).status == 200  # fmt: skip
            for gateway in gateways:
                _until(lambda gateway=gateway: "Redis is back but empty" in gateway.output())
            assert any("answered 503 until it is back" in gateway.output() for gateway in gateways)
        finally:
            for gateway in gateways:
                gateway.stop()
