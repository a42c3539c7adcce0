"""A browser MCP client through CORS: the official TypeScript SDK (npm @modelcontextprotocol/sdk, bundled for the
browser by esbuild from `mcp_client_entry.js`) runs in Chromium on a page of one origin and connects to a gateway
process on another origin that lists the page's. It initializes, lists tools, calls one and reads
`Mcp-Session-Id` (which it can only if the gateway exposes it); the SDK's HTTP+SSE transport and a raw 2026-07-28
request from the same page go through too. The same page served from an origin the gateway does not list gets
nothing (the browser's fetch fails on the refused preflight), and a page whose host name resolves to loopback (DNS
rebinding, played by Chromium's `*.localhost`) is refused by the Host check (421).

The SDK (1.32.2) speaks revisions up to 2025-11-25: the 2026-07-28 era is reached by the page's own fetch.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest
from playwright.sync_api import Browser

from tests.gateway.conftest import ECHO_SPEC
from tests.gateway.echo_backend import create_app as echo_app
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import ACCEPT_BOTH, preflight
from tests.support.processes import Background, free_port

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "tools" / "node" / "node_modules"
ESBUILD = NODE_MODULES / ".bin" / "esbuild"
ENTRY = Path(__file__).with_name("mcp_client_entry.js")
KEY = "k" * 24
PAGE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MCP client</title></head>
<body><pre id="results"></pre><script type="module" src="client.js"></script></body></html>
"""


@dataclass(frozen=True)
class Setup:
    page_port: int
    gateway_port: int

    @property
    def listed_page(self) -> str:
        return f"http://127.0.0.1:{self.page_port}"

    @property
    def unlisted_page(self) -> str:  # the same server under another name: another origin
        return f"http://localhost:{self.page_port}"

    @property
    def mcp(self) -> str:
        return f"http://localhost:{self.gateway_port}/mcp/echo"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _bundle(folder: Path) -> None:
    """The entry script and the SDK it imports as one ES module for the browser."""
    assert ESBUILD.exists(), "no esbuild: run scripts/setup.sh --test (tools/node)"
    command = [str(ESBUILD), str(ENTRY), "--bundle", "--format=esm", "--platform=browser", "--log-level=warning"]
    command.append(f"--outfile={folder / 'client.js'}")
    env = {**os.environ, "NODE_PATH": str(NODE_MODULES)}  # the entry lives outside tools/node
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    (folder / "index.html").write_text(PAGE_HTML)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    folder = tmp_path_factory.mktemp("browser_client")
    site = folder / "site"
    site.mkdir()
    _bundle(site)
    pages = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(site)))
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    page_port = int(pages.server_address[1])
    try:
        with live_aiohttp(echo_app) as echo:
            config = folder / "gateway.yaml"
            config.write_text(
                f'services:\n  echo: {{openapi: {ECHO_SPEC}, backend: "{echo}/v1"}}\n'
                "expositions:\n  echo:\n    services: [echo]\n    auth: {api_key: {env: ECHO_KEY}}\n"
            )
            port = free_port()
            origin = f"http://127.0.0.1:{page_port}"
            args = ("serve", str(config), "--port", str(port), "--cors-origin", origin)
            gateway = Background(folder / "g.log", *args, env={"ECHO_KEY": KEY})
            try:
                gateway.wait_for_http(f"http://127.0.0.1:{port}/healthz")
                yield Setup(page_port, port)
            finally:
                gateway.stop()
    finally:
        pages.shutdown()
        pages.server_close()


def _results(browser: Browser, page_origin: str, mcp: str) -> dict[str, Any]:
    """Open the client page from `page_origin` and read what its client reported."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{page_origin}/index.html?{urlencode({'mcp': mcp, 'key': KEY})}")
        page.wait_for_selector("#results[data-done]", state="attached", timeout=20_000)
        reported: dict[str, Any] = json.loads(page.inner_text("#results"))
        return reported
    finally:
        context.close()


def test_the_official_client_connects_from_a_listed_origin(setup: Setup, browser: Browser) -> None:
    results = _results(browser, setup.listed_page, setup.mcp)
    streamable = results["streamable"]
    assert "error" not in streamable, streamable
    assert streamable["protocolVersion"] == "2025-11-25"
    assert streamable["sessionId"]  # read from the exposed Mcp-Session-Id, sent back on every later request
    assert "get_item" in streamable["tools"]
    assert streamable["call"]["isError"] is False
    assert streamable["call"]["structuredContent"]["path"] == "/v1/items/7"
    assert results["httpSse"] == {"structuredContent": results["httpSse"]["structuredContent"]}, results["httpSse"]
    assert results["httpSse"]["structuredContent"]["path"] == "/v1/items/8"
    stateless = results["stateless"]
    assert stateless["status"] == 200 and stateless["error"] is None, stateless
    assert stateless["sessionId"] is None  # no sessions in 2026-07-28
    assert stateless["structuredContent"]["path"] == "/v1/items/9"


def test_an_origin_not_listed_gets_nothing(setup: Setup, browser: Browser) -> None:
    results = _results(browser, setup.unlisted_page, setup.mcp)
    for part in ("streamable", "httpSse", "stateless"):
        assert "Failed to fetch" in results[part]["error"], results[part]
    assert results["streamable"]["sessionId"] is None
    # what the browser was told: its preflight refused, no CORS header on it
    refused = preflight(setup.mcp, setup.unlisted_page)
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers


def test_dns_rebinding_is_still_refused(setup: Setup, browser: Browser) -> None:
    # Chromium resolves every *.localhost name to loopback: a page there reaches the gateway "same-origin",
    # as a page on a rebound public name would, with its own name in Host.
    rebound = f"http://rebind.localhost:{setup.gateway_port}"
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{rebound}/healthz")
        status: list[Any] = page.evaluate(
            """async ([url, key]) => {
                const response = await fetch(url, {method: "POST", body: "{}", headers: {
                    "Content-Type": "application/json", Accept: "application/json, text/event-stream",
                    Authorization: `Bearer ${key}`}});
                return [response.status, await response.text()];
            }""",
            [f"{rebound}/mcp/echo", KEY],
        )
    finally:
        context.close()
    assert status[0] == 421 and "DNS rebinding" in status[1]  # the page may read it: same origin, no tools
    # a foreign Host is refused even with a listed Origin
    headers = {"host": "rebind.example:80", "origin": setup.listed_page, "accept": ACCEPT_BOTH}
    answer = httpx2.post(setup.mcp, json={}, headers={**headers, "authorization": f"Bearer {KEY}"})
    assert answer.status_code == 421 and "DNS rebinding" in answer.text
