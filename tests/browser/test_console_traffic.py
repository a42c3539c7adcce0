"""The Traffic screen, the console's home, driven in Chromium: the calls a test just made through the gateway
show in the figures, the charts and the busiest and failing tools, within a report or two; a tool's own screen
shows only its calls; the gateway is up and serves the latest revision; every control is labelled."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from apimcp.traffic import reporting
from tests.browser.conftest import Seen, Served, api, log_in, serving, unexpected, unlabelled
from tests.support.mcp_http import McpHttp


@pytest.fixture(scope="module", autouse=True)
def fast_reports() -> Iterator[None]:
    """The gateway of `served` (in this process) reports its counts every 0.3 s rather than every 5."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reporting, "INTERVAL_SECONDS", 0.3)
        yield


def _traffic(served: Served, calls: int, **params: str) -> dict[str, Any]:
    """The control plane's figures once they count at least `calls` calls."""
    deadline = time.monotonic() + 20
    with api(served) as client:
        while True:
            figures: dict[str, Any] = client.get("/traffic", params=params).json()
            if figures["totals"]["calls"] >= calls:
                return figures
            assert time.monotonic() < deadline, figures["totals"]
            time.sleep(0.2)


def _exposed(served: Served, name: str) -> str:
    """The Bookshelf description imported, planned and exposed as `name`; its URL, once the gateway serves it."""
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": f"shelf-{name}"}
        )
        assert imported.status_code == 201, imported.text
        plan = client.post(
            "/plans", json={"name": name, "service_id": imported.json()["id"], "backend_endpoint": served.backend}
        )
        assert plan.status_code == 201, plan.text
        assert client.post("/expositions", json={"plan_id": plan.json()["id"], "name": name}).status_code == 201
    url = f"{served.base}/mcp/default/{name}"
    serving(url)
    return url


def test_the_home_screen_shows_the_calls_just_made_and_where_they_fail(page: Page, served: Served, seen: Seen) -> None:
    url = _exposed(served, "busy")
    with McpHttp(url) as mcp:
        for _ in range(12):
            listed = mcp.modern(
                "tools/call", {"name": "list_books", "arguments": {}}, headers={"Mcp-Name": "list_books"}
            )
            assert listed.status == 200 and listed.result.get("isError") is not True, listed.text
        for _ in range(3):
            missing = mcp.modern(
                "tools/call", {"name": "get_book", "arguments": {"bookId": "no-such-book"}},
                headers={"Mcp-Name": "get_book"},
            )  # fmt: skip
            assert missing.result.get("isError") is True, missing.text
    figures = _traffic(served, 16, exposition="busy")
    assert [(t["tool"], t["calls"]) for t in figures["busiest"][:2]] == [("list_books", 12), ("get_book", 3)]
    assert [(t["tool"], t["errors"]) for t in figures["failing"]] == [("get_book", 3)]
    assert figures["totals"]["outcomes"]["tool_error"] == 3
    assert figures["totals"]["backend_p50_ms"] is not None

    log_in(page, served)  # the home screen
    busiest = page.get_by_role("table", name="Busiest tools")
    expect(busiest).to_contain_text("list_books")
    expect(page.get_by_role("table", name="Failing tools, most errors first")).to_contain_text("get_book")
    expect(page.get_by_role("img", name="Calls of every exposition, the last hour, by minute")).to_be_visible()
    expect(page.get_by_role("img", name="Latency of every exposition", exact=False)).to_be_visible()
    expect(page.locator("svg.chart rect.bar.failed").first).to_be_attached()
    gateways = page.get_by_role("table", name="Gateways, their health and the revision each serves")
    expect(gateways).to_contain_text("up")
    expect(gateways).to_contain_text("(latest)")
    assert unlabelled(page) == []

    page.get_by_role("table", name="Failing tools, most errors first").get_by_role("link", name="get_book").click()
    expect(page.get_by_role("heading", level=1, name="Traffic of get_book")).to_be_focused()
    errors_by_kind = page.get_by_role("table", name="Requests of tool get_book in busy that did not succeed, by kind")
    expect(errors_by_kind).to_contain_text("tool errors")
    expect(errors_by_kind).to_contain_text("3")
    page.get_by_role("link", name="The exposition's traffic").click()
    expect(page.get_by_role("heading", level=1, name="Traffic of busy")).to_be_focused()
    page.get_by_label("Window").select_option("day")
    expect(page.get_by_role("img", name="Calls of exposition busy, the last day, by hour", exact=False)).to_be_visible()
    assert unexpected(seen.problems) == []


def test_calls_of_tools_the_exposition_does_not_serve_are_counted_together(served: Served) -> None:
    """The finding: a tool's name is the client's to make up, and each made-up name became rows of its own (kept
    31 days, read whole by every /traffic), so one client could flood the counts."""
    url = _exposed(served, "made-up")
    with McpHttp(url) as mcp:
        for n in range(20):
            name = f"made_up_{n}"
            made_up = mcp.modern("tools/call", {"name": name, "arguments": {}}, headers={"Mcp-Name": name})
            assert made_up.error["message"] == f"Unknown tool: {name}", made_up.text
        listed = mcp.modern("tools/call", {"name": "list_books", "arguments": {}}, headers={"Mcp-Name": "list_books"})
        assert listed.status == 200, listed.text
    deadline = time.monotonic() + 20
    while True:  # every call reported (the readiness check's tools/list counts toward the total too)
        tools = {t["tool"]: t["calls"] for t in _traffic(served, 21, exposition="made-up")["busiest"]}
        if tools.get("list_books") == 1 and tools.get("(other)") == 20:
            break
        assert time.monotonic() < deadline, tools
        time.sleep(0.2)
    assert tools == {"(other)": 20, "list_books": 1}
