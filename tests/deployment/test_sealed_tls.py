"""A control plane over TLS and a gateway holding a registered key, as separate processes, end to end.

The gateway trusts the control plane's private CA, calls the backend with the
secret, and serves MCP over TLS itself; the snapshot it receives never carries
the secret in clear, and a gateway whose key is not registered is told so.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import orjson
import pytest

from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import open_exposition
from tests.deployment.harness import ECHO_SPEC, wait_until
from tests.gateway.echo_backend import create_app as echo_app
from tests.gateway.echo_backend import digest
from tests.support.grpc_certs import make_pki
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import McpHttp
from tests.support.processes import Background, cli, free_port

SECRET_VALUE = "s3aled-value-that-only-the-gateway-opens"


@pytest.fixture
def backend() -> Iterator[str]:
    with live_aiohttp(echo_app) as url:
        yield f"{url}/v1"


def _ok(*args: str) -> str:
    done = cli(*args, env={"ECHO_KEY": SECRET_VALUE})
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout + done.stderr


def _tools(url: str, trust: ssl.SSLContext) -> set[str]:
    with McpHttp(url) as mcp:
        mcp.http = httpx2.Client(timeout=10, verify=trust)
        reply = mcp.modern("tools/list")
        return {tool["name"] for tool in reply.result["tools"]} if reply.status == 200 else set()


def test_a_tls_control_plane_and_a_keyed_gateway_keep_secrets_sealed_in_transit(tmp_path: Path, backend: str) -> None:
    pki = make_pki()
    files = {"ca.pem": pki.ca.cert_pem, "server.pem": pki.server.cert_pem, "server-key.pem": pki.server.key_pem}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    tls = ["--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server-key.pem")]
    trust = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
    plane_port, gateway_port, stranger_port = free_port(), free_port(), free_port()
    plane_url = f"https://localhost:{plane_port}"
    data = tmp_path / "data"
    plane_args = ["control-plane", "--port", str(plane_port), "--data-dir", str(data), *tls]
    plane = Background(tmp_path / "plane.log", *plane_args)
    processes = [plane]
    outputs: list[str] = []
    try:
        plane.wait_for_port(plane_port)
        token = (data / "bootstrap-token").read_text().strip()
        outputs.append(_ok("login", plane_url, "--token", token, "--ca", str(tmp_path / "ca.pem")))
        gateway_token = json.loads(_ok("token", "create", "edge", "--kind", "gateway", "-o", "json"))["token"]
        key_file = tmp_path / "edge.pem"
        outputs.append(_ok("gateway-key", "create", "edge", "--out", str(key_file)))
        outputs.append(_ok("secret", "create", "echo-key", "--kind", "api_key", "--field", "name=X-Echo-Key",
                           "--value-env", "value=ECHO_KEY"))  # fmt: skip
        outputs.append(_ok("import", str(ECHO_SPEC), "--name", "echo", "--backend", backend, "--include", "secured",
                           "--expose", "echo"))  # fmt: skip
        outputs.append(_ok("plan", "update", "default", "--secret", "echo-key"))

        # What crosses the wire to a gateway: the secret sealed, readable with the gateway's private key only.
        key = GatewayKey.load(key_file)
        with httpx2.Client(verify=trust, headers={"Authorization": f"Bearer {gateway_token}"}) as http:
            wire = http.post(f"{plane_url}/api/v1/gateway/snapshot",
                             json={"name": "probe", "public_key": key.public.text})  # fmt: skip
        assert wire.status_code == 200, wire.text
        assert SECRET_VALUE.encode() not in wire.content
        opened = [open_exposition(e, key) for e in wire.json()["expositions"]]
        assert SECRET_VALUE in orjson.dumps(opened).decode()

        gateway_args = ["gateway", "--control-plane", plane_url, "--control-plane-ca", str(tmp_path / "ca.pem")]
        gateway = Background(
            tmp_path / "gateway.log", *gateway_args, "--name", "edge-1", "--port", str(gateway_port),
            "--key-file", str(key_file), *tls, env={"APIMCP_GATEWAY_TOKEN": gateway_token},
        )  # fmt: skip
        processes.append(gateway)
        stranger_key = tmp_path / "stranger.pem"
        GatewayKey.generate().write(stranger_key)
        stranger = Background(
            tmp_path / "stranger.log", *gateway_args, "--name", "edge-2", "--port", str(stranger_port),
            "--key-file", str(stranger_key), env={"APIMCP_GATEWAY_TOKEN": gateway_token},
        )  # fmt: skip
        processes.append(stranger)

        endpoint = f"https://localhost:{gateway_port}/mcp/default/echo"
        gateway.wait_for_port(gateway_port)
        wait_until(lambda: _tools(endpoint, trust) == {"secured"}, seconds=15)
        with McpHttp(endpoint) as mcp:
            mcp.http = httpx2.Client(timeout=10, verify=trust)
            sent = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result["structuredContent"]
        # opened by the gateway, sent to the backend (whose echo of it the gateway masks)
        assert sent["header_digests"]["X-Echo-Key"] == digest(SECRET_VALUE)
        assert sent["headers"]["X-Echo-Key"] == "***"

        stranger.wait_for_http(f"http://127.0.0.1:{stranger_port}/healthz")
        wait_until(lambda: "is not registered in organization default" in stranger.output(), seconds=10)
        assert httpx2.get(f"http://127.0.0.1:{stranger_port}/healthz").json()["expositions"] == 0
        time.sleep(0.5)
    finally:
        for process in reversed(processes):
            process.stop()
    logs = [process.output() for process in processes]
    assert stranger.output().count("is not registered") == 1  # said once, not at every retry
    assert "apimcp gateway-key create" in stranger.output()
    for text in [*outputs, *logs]:
        assert SECRET_VALUE not in text
        assert "Traceback" not in text
