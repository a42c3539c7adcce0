"""A service of 1,000 operations and a Try it of 1,000 tools in Chromium: the operations searched and paged (the
search and the page in the screen's address), a tool found by typing and called. The render times are measured
and printed (`-s` shows them; bench/console_bench.py prints them alone), never asserted: machines are noisy."""

from __future__ import annotations

import json
import re
import statistics
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Seen, Served, api, log_in, serving, unexpected, unlabelled
from tests.support.many_operations import many_operations

OPERATIONS = 1000


def counted(text: str) -> str:
    """A pager's count as the console writes it: "1-50 of 1,000" with an en dash."""
    return text.replace("-", "\u2013", 1)


class _Things(BaseHTTPRequestHandler):
    """A backend answering every GET with the path and query it was asked."""

    def do_GET(self) -> None:
        body = json.dumps({"asked": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Many:
    service_id: str
    exposition_id: str
    url: str


def things_backend() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Things)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def expose_many(served: Served, backend: str, count: int = OPERATIONS) -> Many:
    """Import a description of `count` operations, plan it on `backend` and expose it as `many`."""
    with api(served) as client:
        imported = client.post(
            "/services",
            files={"file": ("many.json", many_operations(count), "application/json")},
            data={"name": "many", "version": "1"},
        )
        assert imported.status_code in (200, 201), imported.text
        service = imported.json()
        plan = client.post("/plans", json={"service_id": service["id"], "name": "many", "backend_endpoint": backend})
        assert plan.status_code == 201, plan.text
        exposition = client.post("/expositions", json={"plan_id": plan.json()["id"], "name": "many"})
        assert exposition.status_code == 201, exposition.text
    url = f"{served.base}/mcp/default/many"
    assert len(serving(url)["tools"]) > 0
    return Many(service["id"], exposition.json()["id"], url)


@pytest.fixture(scope="module")
def many(served: Served) -> Iterator[Many]:
    backend = things_backend()
    yield expose_many(served, next(backend))
    next(backend, None)


# The time from asking for a screen (its address set) to the new screen drawn: its REST calls and its rendering,
# measured in the page with performance.now() (the console's own `aria-busy` says when the screen is done).
SCREEN_TIME = """async ([address, selector]) => {
    const screen = () => document.querySelector("section.screen");
    const before = screen();
    const start = performance.now();
    window.location.hash = address;
    await new Promise((done) => {
        const check = () => {
            const now = screen(); // the new screen (the address's), not the one it replaces
            if (now && now !== before && !now.hasAttribute("aria-busy") && now.querySelector(selector)) done();
            else requestAnimationFrame(check);
        };
        requestAnimationFrame(check);
    });
    return performance.now() - start;
}"""

# How long each REST call of the screen took (the browser's resource timings), the newest call of each path.
API_TIMES = """() => {
    const calls = new Map();
    for (const entry of performance.getEntriesByType("resource")) {
        const url = new URL(entry.name);
        if (url.pathname.includes("/api/v1/")) calls.set(url.pathname.replace(/.*\\/api\\/v1/, "GET "), entry.duration);
    }
    performance.clearResourceTimings();
    const named = (name) => name.replace(/\\/[0-9a-z]{13}(?=\\/|$)/g, "/{id}");
    return [...calls].map(([name, duration]) => ({ name: named(name), duration }));
}"""

# The time from a click to `selector` being there (for Try it: the tools listed and their picker drawn).
CLICK_TIME = """async ([button, selector]) => {
    const target = [...document.querySelectorAll("button")].find((b) => b.textContent === button);
    const start = performance.now();
    target.click();
    await new Promise((done) => {
        const check = () => (document.querySelector(selector) ? done() : requestAnimationFrame(check));
        requestAnimationFrame(check);
    });
    return performance.now() - start;
}"""

# Typing into the tool picker: the time to filter the tools and draw the matches (synchronous, then one frame).
TYPE_TIME = """async (typed) => {
    const input = document.querySelector('[role="combobox"]');
    const start = performance.now();
    input.value = typed;
    input.dispatchEvent(new Event("input"));
    const drawn = performance.now() - start;
    await new Promise((done) => requestAnimationFrame(() => done()));
    return [drawn, performance.now() - start];
}"""

# What the Services screen drew before pages: one table of every operation, built with dom.js (for comparison).
WHOLE_TABLE_TIME = """async (id) => {
    const { table, h } = await import("./dom.js");
    const service = await (await fetch(`../api/v1/services/${id}`, {
        headers: { Authorization: `Bearer ${sessionStorage.getItem("apimcp.console.token")}` } })).json();
    const start = performance.now();
    const node = table("Operations", ["Tool", "Signature", "Operation id", "Title", "Tags"], service.operations.map(
        (op) => [h("code", {}, op.tool_name), h("code", {}, op.signature), op.operation_id || "", op.title || "",
            op.tags.join(", ")]));
    document.querySelector("main").append(node);
    await new Promise((done) => requestAnimationFrame(() => done()));
    const took = performance.now() - start;
    node.remove();
    return took;
}"""


def measure_once(page: Page, many: Many) -> dict[str, float]:
    """Render times in milliseconds of the service's screen (and the REST calls it made), Try it's list of tools and
    typing a search into it. The page is logged in."""
    figures: dict[str, float] = {}
    page.evaluate("performance.clearResourceTimings()")
    figures["service screen (1,000 operations, first page)"] = page.evaluate(
        SCREEN_TIME, [f"#/services?service={many.service_id}", "table tbody tr"]
    )
    for entry in page.evaluate(API_TIMES):
        figures[f"  of which {entry['name']}"] = entry["duration"]
    figures["operations: next page"] = page.evaluate(CLICK_TIME, ["Next page", "table tbody tr code"])
    figures["the whole table of 1,000 operations (before: for comparison)"] = page.evaluate(
        WHOLE_TABLE_TIME, many.service_id
    )
    figures["Try it screen"] = page.evaluate(SCREEN_TIME, [f"#/try?exposition={many.exposition_id}", "form"])
    figures["Try it: list 1,000 tools and draw the picker"] = page.evaluate(
        CLICK_TIME, ["List its tools", '[role="combobox"]']
    )
    drawn, framed = page.evaluate(TYPE_TIME, "op07")
    figures["Try it: type a search (filter and draw)"] = drawn
    figures["Try it: type a search (to the next frame)"] = framed
    return figures


def measure(page: Page, many: Many, rounds: int = 3) -> dict[str, float]:
    """The median of each figure over `rounds` (the first round, which warms the caches, is not counted)."""
    measure_once(page, many)
    taken = [measure_once(page, many) for _ in range(rounds)]
    return {name: statistics.median(t[name] for t in taken if name in t) for name in taken[-1]}


def report(figures: dict[str, float]) -> str:
    return "\n".join(f"{name:<62} {took:8.1f} ms" for name, took in figures.items())


def test_a_thousand_operations_are_searched_and_paged(page: Page, served: Served, many: Many, seen: Seen) -> None:
    log_in(page, served)
    page.goto(f"{served.base}/console/#/services?service={many.service_id}")
    expect(page.get_by_role("heading", level=1, name="Service many 1")).to_be_visible()
    operations = page.get_by_role("table", name="Operations")
    pages = page.get_by_role("navigation", name="Pages of the operations")
    expect(page.get_by_text(counted("1-50 of 1,000 operations"))).to_be_visible()
    expect(operations.locator("tbody tr")).to_have_count(50)
    expect(operations.locator("tbody tr").first).to_contain_text("op0001")
    expect(pages.get_by_role("button", name="Previous page")).to_be_disabled()

    # page 2: operations 51 to 100, in the address; the focus stays on the pager
    pages.get_by_role("button", name="Next page").click()
    expect(page.get_by_text(counted("51-100 of 1,000 operations"))).to_be_visible()
    expect(operations.locator("tbody tr").first).to_contain_text("op0051")
    expect(operations.locator("tbody tr").last).to_contain_text("op0100")
    assert re.search(r"[?&]offset=50(&|$)", page.url)
    expect(pages.get_by_role("button", name="Next page")).to_be_focused()
    page.keyboard.press("Enter")  # the pager by keyboard: page 3
    expect(page.get_by_text(counted("101-150 of 1,000 operations"))).to_be_visible()

    # a search narrows to the one matching, from the first page; the address keeps it over a reload
    search = page.get_by_label("Search the operations")
    search.fill("GET /things/0777")
    search.press("Enter")
    expect(page.get_by_text(counted("1-1 of 1 operations matching “GET /things/0777”"))).to_be_visible()
    expect(operations.locator("tbody tr")).to_have_count(1)
    expect(operations.locator("tbody tr")).to_contain_text("op0777")
    expect(search).to_be_focused()
    page.reload()
    expect(page.get_by_role("table", name="Operations").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_label("Search the operations")).to_have_value("GET /things/0777")
    # back in the browser's history: page 3 again
    page.go_back()
    expect(page.get_by_text(counted("101-150 of 1,000 operations"))).to_be_visible()

    # a tag, 100 a page; nothing matching; the search cleared
    search = page.get_by_label("Search the operations")
    search.fill("hundred")
    search.press("Enter")
    expect(page.get_by_text(counted("1-10 of 10 operations matching “hundred”"))).to_be_visible()
    search.fill("no such thing")
    search.press("Enter")
    expect(page.get_by_text("No operations match “no such thing”.")).to_be_visible()
    page.get_by_role("button", name="Clear the search").click()
    page.get_by_label("Operations per page").select_option("100")
    # a page of 100 operations: once, on a loaded CI machine, not drawn within the default 5 s
    expect(page.get_by_text(counted("1-100 of 1,000 operations"))).to_be_visible(timeout=15_000)
    expect(page.get_by_role("table", name="Operations").locator("tbody tr")).to_have_count(100)
    assert "limit=100" in page.url
    assert unlabelled(page) == []

    # the services list is searched the same way
    page.goto(f"{served.base}/console/#/services?q=MANY")
    expect(page.get_by_role("table", name="Services").locator("tbody tr")).to_have_count(1)
    expect(page.get_by_text(counted("1-1 of 1 services matching “MANY”"))).to_be_visible()
    # and the plans list
    page.goto(f"{served.base}/console/#/plans")
    page.get_by_label("Search the plans").fill("many 1")
    page.get_by_role("button", name="Search", exact=True).click()
    rows = page.get_by_role("table", name="Plans").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("many 1")  # the plan's service, by name and version
    expect(page.get_by_text(counted("1-1 of 1 plans matching “many 1”"))).to_be_visible()
    assert "q=many+1" in page.url
    assert unexpected(seen.problems) == []


def test_a_thousand_tools_are_found_by_typing_and_called(page: Page, served: Served, many: Many, seen: Seen) -> None:
    log_in(page, served)
    page.goto(f"{served.base}/console/#/try?exposition={many.exposition_id}")
    page.get_by_role("button", name="List its tools").click()
    expect(page.get_by_role("status")).to_contain_text(f"1000 tools at {many.url}")
    picker = page.get_by_role("combobox", name="Tool")
    expect(picker).to_have_value("op0001")

    # typing filters; at most 50 matches are listed
    picker.fill("op")
    matches = page.get_by_role("listbox", name="Matching tools")
    expect(matches.get_by_role("option")).to_have_count(50)
    expect(page.get_by_text("1000 tools match; the first 50 are listed: type more to narrow.")).to_be_visible()
    picker.fill("thing number 777")
    expect(matches.get_by_role("option")).to_have_count(1)
    expect(picker).to_have_attribute("aria-expanded", "true")

    # by keyboard: Down highlights it, Enter picks it (and does not call it)
    picker.press("ArrowDown")
    expect(matches.get_by_role("option", selected=True)).to_contain_text("op0777")
    picker.press("Enter")
    expect(picker).to_have_value("op0777")
    expect(picker).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("region", name="Result")).to_contain_text("No call yet.")
    expect(page.locator(".description")).to_contain_text("Read thing number 777")

    # Escape closes the list; the picked tool is called with its argument
    picker.fill("op09")
    expect(matches).to_be_visible()
    picker.press("Escape")
    expect(matches).to_be_hidden()
    picker.fill("op0777")
    page.get_by_label("note").fill("hello")
    page.get_by_role("button", name="Call the tool").click()
    result = page.get_by_role("region", name="Result")
    expect(result).to_contain_text("op0777 succeeded")
    expect(result).to_contain_text("/things/0777?note=hello")

    # a name that is no tool is said, not called
    picker.fill("nothing like it")
    expect(page.get_by_text("No tool matches.")).to_be_visible()
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("alert")).to_contain_text("no tool is named “nothing like it”")
    assert unlabelled(page) == []
    assert unexpected(seen.problems) == []


def test_render_times_are_measured(page: Page, served: Served, many: Many, capsys: pytest.CaptureFixture[str]) -> None:
    log_in(page, served)
    figures = measure(page, many)
    assert all(took >= 0 for took in figures.values())  # measured; how long is for people to read, not to assert
    with capsys.disabled():
        print(f"\nconsole render times (ms):\n{report(figures)}")
