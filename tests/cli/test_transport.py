"""How the CLI and gateways reach a control plane: no plain HTTP off loopback unless told, private CAs, TLS flags."""

from __future__ import annotations

import json
import os
import socket
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from apimcp.safety.plain_http import is_loopback, refusal
from apimcp.sealing.keys import GatewayKey
from tests.deployment.harness import Deployment
from tests.support.grpc_certs import make_pki
from tests.support.processes import Background, free_port

INTERNAL = "cp.internal.test"
"""A host name that is not loopback by its spelling; the tests resolve it to 127.0.0.1 so nothing leaves the host."""


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


@pytest.fixture
def internal_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """INTERNAL and the names under it resolve to loopback in this process."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if str(host).endswith(INTERNAL) else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def _token(live: Deployment) -> str:
    return str(live.api.http.headers["Authorization"]).removeprefix("Bearer ")


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://cp.example.com", False),
        ("http://127.0.0.1:8080", False),
        ("http://127.8.9.10", False),
        ("http://localhost:8080", False),
        ("http://[::1]:8080", False),
        ("http://cp.example.com:8080", True),
        ("http://10.0.0.5:8080", True),
        ("http://localhost.evil.example", True),
        ("ftp://cp.example.com", True),
        ("cp.example.com:8080", True),
    ],
)
def test_which_control_plane_urls_are_refused(url: str, refused: bool) -> None:
    assert (refusal(url, allow_http=False) is not None) == refused
    if url.startswith("http://"):
        assert refusal(url, allow_http=True) is None


def test_loopback_is_decided_without_resolving_names() -> None:
    assert is_loopback("127.0.0.1")
    assert is_loopback("LOCALHOST")
    assert not is_loopback("runsc")  # whatever /etc/hosts says
    assert not is_loopback(None)


def test_login_refuses_a_plain_http_control_plane_off_loopback(live: Deployment, internal_name: None) -> None:
    """The finding: tokens and snapshots went over plain HTTP. The CLI refuses http:// off loopback."""
    port = urlsplit(live.base).port
    url = f"http://{INTERNAL}:{port}"
    refused = run("login", url, "--token", _token(live), code=2).output
    assert "plain HTTP to a host that is not loopback" in refused
    assert "--allow-http" in refused
    assert not Path(os.environ["APIMCP_CONFIG"]).exists()

    accepted = run("login", url, "--token", _token(live), "--allow-http").output
    assert f"Logged in to {url}" in accepted
    assert json.loads(run("gateway-group", "list", "-o", "json").output)[0]["name"] == "default"
    # another plain http:// URL from the environment was not part of that choice
    elsewhere = {"APIMCP_URL": f"http://other.{INTERNAL}:{port}", "APIMCP_TOKEN": _token(live)}
    assert "plain HTTP" in run("gateway-group", "list", code=1, env=elsewhere).output
    assert "default" in run("gateway-group", "list", env={**elsewhere, "APIMCP_ALLOW_HTTP": "1"}).output


def test_gateway_refuses_plain_http_missing_keys_and_half_tls(tmp_path: Path) -> None:
    token = {"APIMCP_GATEWAY_TOKEN": "apimcp_gateway_x"}
    output = run("gateway", "--control-plane", "http://cp.example.com:8080", code=2, env=token).output
    assert "plain HTTP to a host that is not loopback" in output
    output = run("gateway", "--control-plane", "http://127.0.0.1:9", code=2, env=token).output
    assert "give the gateway key: --key-file FILE or $APIMCP_GATEWAY_KEY" in output
    key_file = tmp_path / "edge.pem"
    GatewayKey.generate().write(key_file)
    key_file.chmod(0o644)
    output = run("gateway", "--control-plane", "http://127.0.0.1:9", "--key-file", str(key_file), code=2, env=token)
    assert "chmod 600" in output.output
    key_file.chmod(0o600)
    base = ["gateway", "--control-plane", "https://127.0.0.1:9", "--key-file", str(key_file)]
    assert "--tls-cert and --tls-key go together" in run(*base, "--tls-cert", str(key_file), code=2, env=token).output
    not_tls = run(*base, "--tls-cert", str(key_file), "--tls-key", str(key_file), code=2, env=token).output
    assert "are not a PEM certificate and its private key" in not_tls
    assert "not a readable PEM CA" in run(*base, "--control-plane-ca", str(key_file), code=2, env=token).output
    not_a_key = run("gateway", "--control-plane", "http://127.0.0.1:9", code=2,
                    env={**token, "APIMCP_GATEWAY_KEY": "nonsense"}).output  # fmt: skip
    assert "not a gateway key" in not_a_key


def test_login_trusts_a_private_ca_when_told(tmp_path: Path) -> None:
    pki = make_pki()
    (tmp_path / "ca.pem").write_bytes(pki.ca.cert_pem)
    (tmp_path / "server.pem").write_bytes(pki.server.cert_pem)
    (tmp_path / "server-key.pem").write_bytes(pki.server.key_pem)
    port = free_port()
    data = tmp_path / "data"
    tls = ["--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server-key.pem")]
    plane = Background(tmp_path / "plane.log", "control-plane", "--port", str(port), "--data-dir", str(data), *tls)
    url = f"https://localhost:{port}"
    try:
        plane.wait_for_port(port)
        token = (data / "bootstrap-token").read_text().strip()
        untrusted = run("login", url, "--token", token, code=1).output
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted
        assert f"Logged in to {url}" in run("login", url, "--token", token, "--ca", str(tmp_path / "ca.pem")).output
        assert json.loads(run("token", "list", "-o", "json").output)[0]["kind"] == "admin"
    finally:
        plane.stop()
    assert f"control plane on {url}/api/v1" in plane.output()


def test_serve_listens_with_tls_when_given_a_certificate(tmp_path: Path) -> None:
    pki = make_pki()
    (tmp_path / "ca.pem").write_bytes(pki.ca.cert_pem)
    (tmp_path / "server.pem").write_bytes(pki.server.cert_pem)
    (tmp_path / "server-key.pem").write_bytes(pki.server.key_pem)
    port = free_port()
    tls = ["--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server-key.pem")]
    served = Background(tmp_path / "serve.log", "serve", "--port", str(port), "--data-dir", str(tmp_path / "d"), *tls)
    try:
        served.wait_for_port(port)
        trust = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        assert httpx2.get(f"https://localhost:{port}/healthz", verify=trust).json()["status"] == "ok"
        token = (tmp_path / "d" / "bootstrap-token").read_text().strip()
        me = httpx2.get(f"https://localhost:{port}/api/v1/organization", verify=trust,
                        headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert me.json()["name"] == "default"
    finally:
        served.stop()
    assert f"control plane and gateway on https://localhost:{port}" in served.output()
