"""A plan's change seen in the console's History, diffed between two versions and rolled back, after which the
gateway serves the rolled-back plan again."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, open_screen, serving, unexpected, unlabelled


def _tools(url: str, count: int) -> list[str]:
    """The names the gateway lists, once it lists `count` of them."""
    deadline = time.monotonic() + 10
    while True:
        names = sorted(tool["name"] for tool in serving(url)["tools"])
        if len(names) == count or time.monotonic() > deadline:
            return names
        time.sleep(0.1)


def test_a_change_is_diffed_and_rolled_back_and_the_gateway_serves_the_old_plan(
    page: Page, served: Served, seen: Seen
) -> None:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-history"}
        )
        assert imported.status_code == 201, imported.text
        body = {"name": "historic", "service_id": imported.json()["id"], "backend_endpoint": served.backend}
        plan = client.post("/plans", json=body).json()
        assert client.post("/expositions", json={"plan_id": plan["id"], "name": "historic"}).status_code == 201
        url = f"{served.base}/mcp/default/historic"
        assert len(_tools(url, 11)) == 11
        narrowed = client.patch(f"/plans/{plan['id']}", json={"include": ["list_books", "get_book"]})
        assert narrowed.status_code == 200, narrowed.text
    assert _tools(url, 2) == ["get_book", "list_books"]

    log_in(page, served)
    open_screen(page, "History")
    changes = page.get_by_role("table", name=re.compile(r"^Changes, newest first"))
    expect(changes.get_by_role("row").filter(has_text="historic").first).to_contain_text("updated")
    changes.get_by_role("row").filter(has_text="plan").filter(has_text="updated").get_by_role(
        "link", name="historic"
    ).first.click()
    expect(page.get_by_role("heading", level=1, name="History of plan historic")).to_be_focused()
    differences = page.get_by_role("table", name="Differences from version 1 to version 2")
    expect(differences).to_contain_text("include")
    expect(differences).to_contain_text("list_books")
    assert unlabelled(page) == []

    page.get_by_role("button", name="Roll back to version 1").click()
    page.get_by_role("dialog").get_by_role("button", name="Roll back to version 1").click()
    expect(page.get_by_role("status")).to_contain_text("Rolled plan historic back to version 1 (version 3): include")
    expect(page.get_by_role("table", name=re.compile(r"^Versions of historic"))).to_contain_text(
        "rolled back to version 1"
    )
    assert len(_tools(url, 11)) == 11  # the gateway serves the rolled-back plan
    assert unexpected(seen.problems) == []
