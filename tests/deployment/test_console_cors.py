"""CORS by default on a gateway that follows a control plane: the control plane's origin, where its web console
runs (the try-it panel calls the gateway from the browser), is allowed besides the listed `--cors-origin`s; any
other origin is not. Checked on real processes: a control plane and a gateway following it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest

from apimcp.gateway.serve import console_origins
from apimcp.protocol.security import TransportSecurity
from tests.support.mcp_http import ACCEPT_BOTH, preflight
from tests.support.processes import Background, free_port, gateway_credentials

LISTED = "https://tools.example.com"


@dataclass(frozen=True)
class Running:
    control_plane: str
    gateway: str


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("console_cors")
    plane_port, gateway_port = free_port(), free_port()
    plane_url = f"http://127.0.0.1:{plane_port}"
    args = ("control-plane", "--port", str(plane_port), "--data-dir", str(folder / "plane"))
    plane = Background(folder / "plane.log", *args)
    gateway: Background | None = None
    try:
        plane.wait_for_http(f"{plane_url}/api/v1/openapi.json")
        env = {"APIMCP_URL": plane_url, "APIMCP_TOKEN": (folder / "plane" / "bootstrap-token").read_text().strip()}
        token = gateway_credentials("edge", folder / "edge.pem", env)
        gateway = Background(
            folder / "gateway.log",
            "gateway", "--control-plane", plane_url, "--name", "edge", "--port", str(gateway_port),
            "--key-file", str(folder / "edge.pem"), "--cors-origin", LISTED,
            env={"APIMCP_GATEWAY_TOKEN": token},
        )  # fmt: skip
        gateway.wait_for_http(f"http://127.0.0.1:{gateway_port}/healthz")
        yield Running(plane_url, f"http://127.0.0.1:{gateway_port}")
    finally:
        if gateway is not None:
            gateway.stop()
        plane.stop()


ASKED = "content-type, mcp-protocol-version"


def test_the_control_planes_origin_is_answered(running: Running) -> None:
    endpoint = f"{running.gateway}/mcp/default/anything"
    for origin in (running.control_plane, LISTED):
        answer = preflight(endpoint, origin, ASKED)
        assert answer.status_code == 204, (origin, answer.text)
        assert answer.headers["access-control-allow-origin"] == origin
        assert answer.headers["access-control-allow-headers"] == "content-type, mcp-protocol-version"
    # the console's request itself passes the Origin check and may be read by the page
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    answer = httpx2.post(endpoint, json=initialize, headers={"origin": running.control_plane, "accept": ACCEPT_BOTH})
    assert answer.status_code == 404  # no such exposition: the gateway's answer, not the Origin check's 403
    assert answer.headers["access-control-allow-origin"] == running.control_plane


def test_healthz_is_readable_by_the_console_and_no_other_page(running: Running) -> None:
    mine = httpx2.get(f"{running.gateway}/healthz", headers={"origin": running.control_plane})
    assert mine.status_code == 200 and mine.json()["status"] == "ok"
    assert mine.headers["access-control-allow-origin"] == running.control_plane
    other = httpx2.get(f"{running.gateway}/healthz", headers={"origin": "https://evil.example"})
    assert other.status_code == 200 and "access-control-allow-origin" not in other.headers


def test_another_origin_is_not(running: Running) -> None:
    endpoint = f"{running.gateway}/mcp/default/anything"
    gateway_port = running.gateway.rsplit(":", 1)[1]
    for origin in ("http://127.0.0.1:9", f"http://localhost:{gateway_port}", "https://evil.example"):
        answer = preflight(endpoint, origin, ASKED)
        assert answer.status_code == 403, origin
        assert "access-control-allow-origin" not in answer.headers


def test_console_origins_are_the_control_planes_origins() -> None:
    urls = ["http://127.0.0.1:8080", "https://CP.example.com:443/prefix/", "http://user@[::1]:8080/"]
    assert console_origins(urls) == ["http://127.0.0.1:8080", "https://cp.example.com", "http://[::1]:8080"]
    security = TransportSecurity.for_hosts([], [LISTED]).with_cors_origins(["https://cp.example.com"])
    assert security.cors_origins == {LISTED, "https://cp.example.com"}
    assert security.origin_allowed("https://cp.example.com") and security.origin_allowed(LISTED)
    assert not security.origin_allowed("https://other.example.com")
    assert not security.host_allowed("cp.example.com")  # a page's origin is not a name the gateway answers to
