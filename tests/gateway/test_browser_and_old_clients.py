"""Clients that are not plain HTTP programs, through a gateway process: browser pages of the origins an operator
lists reach MCP endpoints through CORS (other origins get nothing a browser would let a page read, and the
DNS-rebinding check still refuses them); old clients of the 2024-11-05 HTTP+SSE transport (the official SDK's
`sse_client` in mcp 2, and the last mcp 1.x in a venv of its own) reach a protected exposition at `.../sse`."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from typer.testing import CliRunner

from apimcp.cli.main import app
from apimcp.gateway.config import ConfigError, parse_config
from apimcp.protocol.cors import CorsPolicy, normalized_origin
from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import ACCEPT_BOTH, preflight
from tests.support.processes import Background, free_port

ROOT = Path(__file__).resolve().parents[2]
MCP1_PYTHON = ROOT / ".venv-mcp1" / "bin" / "python"
MCP1_CLIENT = Path(__file__).with_name("mcp1_sse_client.py")
PAGE = "http://app.test:3000"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "page", "version": "1"}},
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("cors")
    with live_aiohttp(echo_app) as echo:
        config = folder / "gateway.yaml"
        config.write_text(
            f'server: {{cors_origins: ["{PAGE}"]}}\n'
            f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n'
            "expositions:\n  echo:\n    services: [echo]\n    auth: {api_key: {env: ECHO_KEY}}\n"
        )
        port = free_port()
        gateway = Background(folder / "g.log", "serve", str(config), "--port", str(port), env={"ECHO_KEY": "k" * 24})
        try:
            gateway.wait_for_http(f"http://127.0.0.1:{port}/healthz")
            yield f"http://127.0.0.1:{port}/mcp/echo"
        finally:
            gateway.stop()


ASKED = "content-type, authorization, mcp-protocol-version, mcp-param-region, x-evil"


def test_a_listed_origin_is_answered_before_the_guard(url: str) -> None:
    answer = preflight(url, PAGE, ASKED)
    assert answer.status_code == 204  # no API key needed: a browser sends none with a preflight
    assert answer.headers["access-control-allow-origin"] == PAGE
    assert "POST" in answer.headers["access-control-allow-methods"]
    allowed = answer.headers["access-control-allow-headers"].split(", ")
    assert allowed == ["content-type", "authorization", "mcp-protocol-version", "mcp-param-region"]
    assert "Origin" in answer.headers["vary"]


def test_its_requests_expose_the_mcp_headers(url: str) -> None:
    headers = {"origin": PAGE, "accept": ACCEPT_BOTH, "authorization": "Bearer " + "k" * 24}
    answer = httpx2.post(url, json=INITIALIZE, headers=headers)
    assert answer.status_code == 200 and answer.headers["mcp-session-id"]
    assert answer.headers["access-control-allow-origin"] == PAGE
    assert "Mcp-Session-Id" in answer.headers["access-control-expose-headers"]
    refused = httpx2.post(url, json=INITIALIZE, headers={"origin": PAGE, "accept": ACCEPT_BOTH})
    assert refused.status_code == 401  # the page may read why (and the challenge)
    assert refused.headers["access-control-allow-origin"] == PAGE
    assert "WWW-Authenticate" in refused.headers["access-control-expose-headers"]


def test_other_origins_get_no_cors_and_stay_refused(url: str) -> None:
    refused = preflight(url, "http://evil.test", ASKED)
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers
    headers = {"origin": "http://evil.test", "accept": ACCEPT_BOTH, "authorization": "Bearer " + "k" * 24}
    answer = httpx2.post(url, json=INITIALIZE, headers=headers)
    assert answer.status_code == 403  # the DNS-rebinding check
    assert "access-control-allow-origin" not in answer.headers
    # without any Origin (not a browser) nothing changes
    plain = httpx2.post(url, json=INITIALIZE, headers={"accept": ACCEPT_BOTH, "authorization": "Bearer " + "k" * 24})
    assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers


def test_origins_are_checked_where_they_are_given(tmp_path: Path) -> None:
    assert normalized_origin("HTTPS://App.Example.com/") == "https://app.example.com"
    assert normalized_origin("http://app.test:3000") == "http://app.test:3000"
    assert normalized_origin("https://app.test:443") == "https://app.test"  # browsers omit default ports
    assert normalized_origin("http://[::1]:3000") == "http://[::1]:3000"
    assert CorsPolicy.of(["https://a.test"]).allows("https://a.test/")
    for bad in ("app.test", "ftp://app.test", "https://app.test/path", "https://user@app.test", "https://a.test:x"):
        with pytest.raises(ValueError, match="CORS origin"):
            normalized_origin(bad)
    with pytest.raises(ConfigError, match="CORS origin"):
        parse_config('server: {cors_origins: ["app.test"]}\nservices: {}\n', "gateway.yaml", tmp_path)
    config = tmp_path / "gateway.yaml"
    config.write_text(f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "http://127.0.0.1:9/v1"}}\n')
    wrong = CliRunner().invoke(app, ["serve", str(config), "--cors-origin", "nowhere"])
    assert wrong.exit_code == 2 and "--cors-origin" in wrong.output


def test_an_http_sse_client_reaches_a_protected_exposition(url: str) -> None:
    async def run() -> object:
        transport = sse_client(f"{url}/sse", headers={"Authorization": "Bearer " + "k" * 24})
        async with Client(transport, mode="legacy") as client:
            result = await client.call_tool("get_item", {"itemId": "3"})
            return result.structured_content

    assert anyio.run(run)["path"] == "/v1/items/3"  # type: ignore[index]
    refused = httpx2.get(f"{url}/sse")  # no key: the guard answers before any stream opens
    assert refused.status_code == 401


def test_an_mcp_1x_client_over_http_sse(url: str) -> None:
    """The last mcp 1.x release's `sse_client` and `ClientSession`, in their own venv (the tests' venv has mcp 2)."""
    assert MCP1_PYTHON.exists(), "no .venv-mcp1: run scripts/setup.sh --test"
    env = {**os.environ, "MCP_API_KEY": "k" * 24}
    command = [str(MCP1_PYTHON), str(MCP1_CLIENT), f"{url}/sse"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["mcp"].startswith("1."), seen  # an old client indeed
    assert seen["protocolVersion"] == "2025-11-25"  # its newest, which the endpoint speaks
    assert len(seen["sessionIds"]) == 1 and seen["sessionIds"][0]  # from the stream's endpoint event
    assert "get_item" in seen["tools"]
    assert seen["isError"] is False and seen["structuredContent"]["path"] == "/v1/items/5"
