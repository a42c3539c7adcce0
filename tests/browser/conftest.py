"""What the console's browser tests share: `apimcp serve` with the Bookshelf backend (one per test module),
Chromium, a fresh page per test recording every response it received and every complaint of the browser, and
the helpers that log in and check labels."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response, expect

from apimcp.demo_api import start
from apimcp.embedded import EmbeddedApp, embedded
from apimcp.protocol import EndpointOptions
from tests.support.browser import chromium
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp

TIMEOUT_MS = 15_000
# Assertions wait as long as actions do: under the parallel suite an answer of the control plane can take more than
# expect's own 5 s (a 409 once reached the console after its alert had been looked for).
expect.set_options(timeout=TIMEOUT_MS)


@dataclass
class Served:
    base: str
    token: str
    backend: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`apimcp serve` (control plane and gateway on one origin) and the Bookshelf backend, nothing imported."""
    data_dir = tmp_path_factory.mktemp("console")
    found: dict[str, str] = {}

    @asynccontextmanager
    async def app() -> AsyncIterator[EmbeddedApp]:
        runner, port = await start("127.0.0.1", 0)
        try:
            async with embedded(data_dir, database_url=None, options=EndpointOptions()) as started:
                assert started.bootstrap_token is not None
                found["token"] = started.bootstrap_token
                found["backend"] = f"http://127.0.0.1:{port}"
                yield started.app
        finally:
            await runner.cleanup()

    with live_app(app) as base:
        yield Served(base, found["token"], found["backend"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@dataclass
class Seen:
    """What a page received (every response body) and what the browser complained about."""

    bodies: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
def page(browser: Browser, seen: Seen) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    opened = context.new_page()

    def record(response: Response) -> None:
        try:
            seen.bodies.append(f"{response.url}\n{response.text()}")
        except Exception:
            seen.bodies.append(response.url)

    def complain(message: ConsoleMessage) -> None:
        if message.type == "error":
            seen.problems.append(message.text)

    opened.on("response", record)
    opened.on("console", complain)
    opened.on("pageerror", lambda error: seen.problems.append(str(error)))
    try:
        yield opened
    finally:
        context.close()


REFUSED = re.compile(r"Failed to load resource: the server responded with a status of (\d+)")


def unexpected(problems: list[str], *expected_statuses: int) -> list[str]:
    """The browser's complaints (script errors, CSP violations), less the refusals a test provoked on purpose."""
    return [p for p in problems if not ((m := REFUSED.match(p)) and int(m.group(1)) in expected_statuses)]


def log_in(page: Page, served: Served) -> None:
    page.goto(f"{served.base}/console/")
    page.get_by_label("API token").fill(served.token)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", level=1, name="Traffic")).to_be_visible()  # the home screen
    expect(page.get_by_text("Organization default")).to_be_visible()


def api(served: Served, token: str | None = None) -> httpx2.Client:
    return httpx2.Client(
        base_url=f"{served.base}/api/v1", headers={"Authorization": f"Bearer {token or served.token}"}, timeout=10
    )


def issue_token(served: Served, name: str, kind: str) -> str:
    """A new API token of `kind` (`user`, with the editor role; `viewer`; `gateway`...), issued by the first admin."""
    with api(served) as client:
        issued = client.post("/tokens", json={"name": name, "kind": kind})
        assert issued.status_code == 201, issued.text
        value: str = issued.json()["token"]
    return value


def serving(url: str, *, within: float = 10) -> dict[str, Any]:
    """The tools/list answer of the exposition at `url`, once the gateway serves it."""
    deadline = time.monotonic() + within
    with McpHttp(url) as client:
        while True:
            reply = client.modern("tools/list")
            if reply.status == 200:
                result: dict[str, Any] = reply.result
                return result
            assert time.monotonic() < deadline, f"{url} still answers {reply.status}"
            time.sleep(0.1)


def open_screen(page: Page, name: str) -> None:
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", level=1, name=name)).to_be_focused()
    expect(page.locator("section.screen")).not_to_have_attribute("aria-busy", "true")


def unlabelled(page: Page) -> list[str]:
    """Form controls on the page without an accessible label."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea')]
             .filter((c) => c.type !== 'hidden' && !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                 && !c.getAttribute('aria-labelledby'))
             .map((c) => c.outerHTML)"""
    )
    return found


def pick_tool(page: Page, name: str) -> None:
    """Pick the tool `name` on the Try it screen: typed into the searchable list, then chosen among the matches."""
    page.get_by_role("combobox", name="Tool").fill(name)
    matches = page.get_by_role("listbox", name="Matching tools")
    matches.get_by_role("option").filter(has_text=re.compile(rf"^{re.escape(name)}\b")).click()
    expect(page.get_by_role("combobox", name="Tool")).to_have_value(name)
