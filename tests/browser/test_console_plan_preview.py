"""A plan edited in Chromium with its preview: the tools the patterns and prefix select are listed as they are
typed, a switch edits the patterns, a pattern that selects nothing is named under its field, and once saved the
gateway's tools/list serves exactly the tools the preview showed switched on."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, serving, unexpected, unlabelled


def test_the_preview_matches_what_the_gateway_then_serves(page: Page, served: Served, seen: Seen) -> None:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-preview"}
        )
        assert imported.status_code == 201, imported.text
        body = {"name": "previewed", "service_id": imported.json()["id"], "backend_endpoint": served.backend}
        plan = client.post("/plans", json=body).json()
        assert client.post("/expositions", json={"plan_id": plan["id"], "name": "previewed"}).status_code == 201
    url = f"{served.base}/mcp/default/previewed"
    assert len(serving(url)["tools"]) == 11

    log_in(page, served)
    page.goto(f"{served.base}/console/#/plans?plan={plan['id']}")
    preview = page.get_by_role("group", name="Tools the plan serves")
    expect(preview).to_contain_text("The plan serves 11 of the service's 11 tools.")

    page.get_by_label("Include", exact=True).fill("tag:books\nno_such_tool")
    expect(page.get_by_text("These patterns select no operation (saving refuses them): no_such_tool")).to_be_visible()
    expect(page.get_by_label("Include", exact=True)).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Include", exact=True).fill("tag:books")
    expect(page.get_by_label("Include", exact=True)).not_to_have_attribute("aria-invalid", "true")
    page.get_by_label("Tool name prefix").fill("shelf_")
    page.get_by_label("Exclude", exact=True).fill("delete_book")
    expect(preview.get_by_label("shelf_delete_book", exact=False)).not_to_be_checked()
    expect(preview).to_contain_text("(excluded by delete_book)")

    # a switch turned off adds the tool to Exclude
    preview.get_by_label("shelf_update_book", exact=False).uncheck()
    expect(page.get_by_label("Exclude", exact=True)).to_have_value("delete_book\nupdate_book")
    # a tool the search finds, not included yet: turned on, it joins Include
    page.get_by_label("Find a tool").fill("author")
    expect(preview.get_by_role("checkbox")).to_have_count(1)
    preview.get_by_label("shelf_get_author", exact=False).check()
    expect(page.get_by_label("Include", exact=True)).to_have_value("tag:books\nget_author")
    page.get_by_label("Find a tool").fill("")
    expect(preview.get_by_label("shelf_get_author", exact=False)).to_be_checked()
    assert unlabelled(page) == []

    switched_on: list[str] = sorted(
        page.evaluate(
            """() => [...document.querySelectorAll('.preview input[type=checkbox]')].filter((box) => box.checked)
                 .map((box) => document.querySelector(`label[for='${box.id}'] code`).textContent)"""
        )
    )
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan previewed")
    expect(page.get_by_role("group", name="Tools the plan serves")).to_contain_text(
        f"The plan serves {len(switched_on)} of the service's 11 tools."
    )
    listed: list[str] = []
    for _ in range(50):  # the gateway follows the change within moments
        listed = sorted(tool["name"] for tool in serving(url)["tools"])
        if listed == switched_on:
            break
        page.wait_for_timeout(100)
    assert listed == switched_on
    assert "shelf_delete_book" not in switched_on and "shelf_get_author" in switched_on

    # the plan names its read-only tools: what the patterns select is read-only, every other tool is not
    page.get_by_label("Name the read-only tools", exact=False).check()
    page.get_by_label("Read-only tools", exact=True).fill("shelf_get_author")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan previewed")
    with api(served) as client:
        assert client.get(f"/plans/{plan['id']}").json()["read_only_tools"] == ["shelf_get_author"]
    wanted = {"shelf_get_author": True, "shelf_get_book": False}
    hints: dict[str, bool] = {}
    for _ in range(50):
        tools = serving(url)["tools"]
        hints = {t["name"]: t.get("annotations", {}).get("readOnlyHint") is True for t in tools if t["name"] in wanted}
        if hints == wanted:
            break
        page.wait_for_timeout(100)
    assert hints == wanted
    assert unexpected(seen.problems) == []
