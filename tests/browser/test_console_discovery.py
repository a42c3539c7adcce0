"""The console's Discovery screen: an exposition's discovery report made on request, its figures, its
context costs per listing mode, and the tools search finds least."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, open_screen, unexpected, unlabelled


def test_the_discovery_report_of_an_exposition(page: Page, served: Served, seen: Seen) -> None:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-found"}
        )
        assert imported.status_code == 201, imported.text
        plan = client.post("/plans", json={"name": "found", "service_id": imported.json()["id"]}).json()
        assert client.post("/expositions", json={"plan_id": plan["id"], "name": "found"}).status_code == 201

    log_in(page, served)
    open_screen(page, "Discovery")
    page.get_by_label("Exposition").select_option(label="found")
    assert unlabelled(page) == []
    page.get_by_role("button", name="Measure how search finds its tools").click()
    expect(page.get_by_role("status")).to_contain_text("Measured how search finds the exposition's tools.")
    expect(page.get_by_text("Found first (recall@1)")).to_be_visible()
    costs = page.get_by_role("table", name="Context cost by listing mode")
    expect(costs).to_contain_text("every tool listed")
    expect(costs).to_contain_text("code mode")
    expect(page.get_by_role("table", name="By kind of query")).to_be_visible()
    with api(served) as client:
        (found,) = [e for e in client.get("/expositions").json() if e["name"] == "found"]
        report = client.get(f"/expositions/{found['id']}/discovery").json()
    expect(page.locator(".figure-value").first).to_have_text(f"{report['overall']['recall@1']:.3f}")
    assert unexpected(seen.problems) == []
