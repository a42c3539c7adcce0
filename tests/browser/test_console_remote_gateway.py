"""The console of a control plane alone (`apimcp control-plane --console-gateway URL`) trying a tool on a gateway
process of another origin: the console's CSP lets the page connect to it, and the gateway, following that control
plane, answers the console's origin through CORS. Real processes: control plane, gateway, Bookshelf backend."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest
from playwright.sync_api import ConsoleMessage, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import pick_tool
from tests.support.browser import chromium
from tests.support.processes import Background, cli_ok, free_port, gateway_credentials


@dataclass(frozen=True)
class Running:
    control_plane: str
    gateway: str
    token: str


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("console_remote")
    plane_port, gateway_port, backend_port = free_port(), free_port(), free_port()
    plane_url, gateway_url = f"http://127.0.0.1:{plane_port}", f"http://127.0.0.1:{gateway_port}"
    started: list[Background] = []
    try:
        backend = Background(folder / "backend.log", "demo-api", "--port", str(backend_port))
        started.append(backend)
        plane = Background(
            folder / "plane.log",
            "control-plane", "--port", str(plane_port), "--data-dir", str(folder / "plane"),
            "--console-gateway", gateway_url,
        )  # fmt: skip
        started.append(plane)
        plane.wait_for_http(f"{plane_url}/api/v1/openapi.json")
        backend.wait_for_http(f"http://127.0.0.1:{backend_port}/openapi.yaml")
        admin = (folder / "plane" / "bootstrap-token").read_text().strip()
        env = {"APIMCP_URL": plane_url, "APIMCP_TOKEN": admin}
        token = gateway_credentials("edge", folder / "edge.pem", env)
        cli_ok("import", str(spec_path()), "--name", "bookshelf", "--backend", f"http://127.0.0.1:{backend_port}",
            "--expose", "shelf", env=env)  # fmt: skip
        gateway = Background(
            folder / "gateway.log",
            "gateway", "--control-plane", plane_url, "--name", "edge", "--port", str(gateway_port),
            "--key-file", str(folder / "edge.pem"),
            env={"APIMCP_GATEWAY_TOKEN": token},
        )  # fmt: skip
        started.append(gateway)
        gateway.wait_for_http(f"{gateway_url}/healthz")
        deadline = time.monotonic() + 20
        while httpx2.get(f"{gateway_url}/healthz").json()["expositions"] < 1:
            assert time.monotonic() < deadline, gateway.output()
            time.sleep(0.1)
        yield Running(plane_url, gateway_url, admin)
    finally:
        for process in reversed(started):
            process.stop()


def test_the_try_it_panel_calls_a_gateway_on_another_origin(running: Running) -> None:
    problems: list[str] = []
    with chromium() as browser:
        context = browser.new_context()
        context.set_default_timeout(15_000)
        page = context.new_page()

        def complain(message: ConsoleMessage) -> None:
            if message.type == "error":
                problems.append(message.text)

        page.on("console", complain)
        page.on("pageerror", lambda error: problems.append(str(error)))
        response = page.goto(f"{running.control_plane}/console/")
        assert response is not None
        assert f"connect-src 'self' {running.gateway};" in response.headers["content-security-policy"]
        page.get_by_label("API token").fill(running.token)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", level=1, name="Traffic")).to_be_visible()

        page.get_by_role("link", name="Expositions").click()
        # The control plane's first --console-gateway is the default base of the MCP URLs shown and called.
        expect(page.get_by_label("Gateway base URL")).to_have_value(running.gateway)
        canonical = f"{running.gateway}/mcp/default/shelf"
        expect(page.get_by_role("table", name="Endpoints of shelf")).to_contain_text(canonical)

        page.get_by_role("link", name="Gateways").click()
        # The gateway answers the control plane's origin on /healthz too (CORS), so the browser reads it.
        expect(page.locator("#healthz")).to_have_text(re.compile(r"^/healthz: ok, revision \d+, 1 expositions$"))
        expect(page.get_by_role("table", name="Gateways seen by the control plane")).to_contain_text("edge")

        page.get_by_role("link", name="Try it").click()
        page.get_by_role("button", name="List its tools").click()
        expect(page.get_by_role("status")).to_contain_text(f"tools at {canonical}")
        pick_tool(page, "list_books")
        page.get_by_role("button", name="Call the tool").click()
        expect(page.get_by_role("region", name="Result")).to_contain_text("list_books succeeded")
        context.close()
    assert [p for p in problems if "/healthz" not in p and "net::ERR_FAILED" not in p] == []
