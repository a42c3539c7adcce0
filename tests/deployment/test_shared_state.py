"""Two gateway processes sharing a Redis (the machine's, a key prefix per test): a session opened on one is
served by the other, a DELETE on one ends it on both, and a credential a user supplies through one replica's
page serves calls on the other."""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from redis import Redis

from tests.auth.user_backend import Accounts, running_accounts
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.state.conftest import REDIS_URL
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, free_port

USER_API = Path(__file__).parent.parent / "auth" / "user_api.yaml"


@dataclass
class Replicas:
    first: str
    second: str


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    prefix = f"apimcp-test:{secrets.token_hex(6)}:"
    env = {
        "APIMCP_STATE_URL": REDIS_URL,
        "APIMCP_STATE_PREFIX": prefix,
        "APIMCP_STATE_KEY": base64.b64encode(os.urandom(32)).decode(),
        "APIMCP_REQUEST_STATE_KEYS": secrets.token_hex(32),
    }
    accounts = Accounts(tokens={"alice-token-0123456789": "alice"})
    with live_aiohttp(echo_app) as echo, running_accounts(accounts) as users:
        config = tmp_path / "gateway.yaml"
        config.write_text(f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}
  accounts:
    openapi: {USER_API}
    backend: "{users}"
    credentials: {{type: user_token, name: accounts-token}}
""")
        ports = [free_port(), free_port()]
        running = [
            Background(tmp_path / f"gateway-{i}.log", "serve", str(config), "--port", str(port), env=env)
            for i, port in enumerate(ports)
        ]
        try:
            for process, port in zip(running, ports, strict=True):
                process.wait_for_http(f"http://127.0.0.1:{port}/healthz")
            yield Replicas(f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}")
        finally:
            for process in running:
                process.stop()
            with Redis.from_url(REDIS_URL) as client:
                keys = list(client.scan_iter(match=prefix + "*", count=1000))
                if keys:
                    client.delete(*keys)


def test_a_session_opened_on_one_replica_is_served_by_the_other(replicas: Replicas) -> None:
    with McpHttp(f"{replicas.first}/mcp/echo") as first, McpHttp(f"{replicas.second}/mcp/echo") as second:
        session = first.initialize()
        call = {"name": "get_item", "arguments": {"itemId": "9"}}
        answered = second.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, session.headers())
        assert answered.status == 200, answered.text
        assert answered.result["structuredContent"]["path"] == "/v1/items/9"
        deleted = httpx2.delete(f"{replicas.second}/mcp/echo", headers=session.headers())
        assert deleted.status_code == 200
        gone = first.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session.headers())
        assert gone.status == 404


def test_a_credential_supplied_through_one_replica_serves_calls_on_the_other(replicas: Replicas) -> None:
    with McpHttp(f"{replicas.first}/mcp/accounts") as first, McpHttp(f"{replicas.second}/mcp/accounts") as second:
        session = first.initialize(capabilities={"elicitation": {"url": {}}})
        asked = session.request("tools/call", {"name": "who_am_i", "arguments": {}}).error
        assert asked["code"] == -32042
        link = asked["data"]["elicitations"][0]["url"]
        on_the_other = link.replace(replicas.first, replicas.second)  # the link's page, reached on the other
        assert httpx2.post(on_the_other, data={"token": "alice-token-0123456789"}).status_code == 200
        assert httpx2.post(link, data={"token": "alice-token-0123456789"}).status_code == 410  # used, everywhere
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "who_am_i", "arguments": {}}}
        answered = second.post(call, session.headers())
    assert answered.result["structuredContent"]["user"] == "alice"
