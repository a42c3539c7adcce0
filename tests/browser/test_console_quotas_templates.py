"""Quotas and templates in the console: a template made on the Templates screen fills the New plan form, the plan
created from it has its settings; an admin sets a quota on the Gateways screen, and what the quota refuses is said
in the console in the API's words."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, open_screen, unexpected, unlabelled


def test_a_plan_made_from_a_template_and_a_quota_refusal_shown(page: Page, served: Served, seen: Seen) -> None:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-templates"}
        )
        assert imported.status_code == 201, imported.text
    log_in(page, served)

    open_screen(page, "Templates")
    expect(page.get_by_text("No template yet.")).to_be_visible()
    page.get_by_label("Template name").fill("secure")
    page.get_by_label("Description").fill("OAuth, five calls a minute each")
    page.get_by_label("Who may call").select_option("oauth")
    page.get_by_label("Authorization servers (issuers)").fill("https://login.example.com/")
    page.get_by_label("Scopes every call needs").fill("books.read")
    caller = page.get_by_role("group", name="Each caller")
    caller.get_by_label("Requests").fill("5")
    caller.get_by_label("Per").select_option(label="minute")
    page.get_by_label("Audit every request").check()
    assert unlabelled(page) == []
    page.get_by_role("button", name="Create the template").click()
    expect(page.get_by_role("status")).to_contain_text("Created template secure.")
    expect(page.get_by_role("table", name="Templates")).to_contain_text("inbound_mode")
    # its versions are in the history like a plan's (the finding: no kind, no link)
    open_screen(page, "History")
    page.get_by_label("Kind").select_option(label="plan templates")
    page.get_by_role("button", name="Show the changes").click()
    page.get_by_role("link", name="secure").first.click()
    expect(page.get_by_role("heading", level=1, name="History of template secure")).to_be_visible()
    expect(page.get_by_role("link", name="Template secure")).to_be_visible()

    open_screen(page, "Plans")
    page.get_by_role("link", name="Create a plan").click()
    held: list[Route] = []  # the answer to the service's choice comes last, after the template's form is edited
    page.route("**/artifacts", lambda route: held.append(route) if not held else route.continue_())
    page.get_by_label("Service").select_option(label="shelf-templates 1.0.0")
    page.get_by_label("Plan name").fill("from-template")
    page.get_by_label("Template").select_option(label="secure")
    expect(page.get_by_label("Who may call")).to_have_value("oauth")  # the form starts from the template
    expect(page.get_by_label("Scopes every call needs")).to_have_value("books.read")
    page.get_by_label("Tasks", exact=True).select_option("all")  # the plan's own, winning over the template's
    held[0].continue_()
    page.unroute("**/artifacts")
    page.wait_for_load_state("networkidle")
    expect(page.get_by_label("Tasks", exact=True)).to_have_value("all")  # the late answer replaced nothing
    assert unlabelled(page) == []
    page.get_by_role("button", name="Create the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Created plan from-template.")
    with api(served) as client:
        plan = next(p for p in client.get("/plans").json() if p["name"] == "from-template")
        assert plan["inbound_mode"] == "oauth" and plan["oauth"]["scopes"] == ["books.read"]
        assert plan["rate_limit"] == {"caller": {"requests": 5, "per_seconds": 60.0, "burst": 5}}
        assert (plan["audit"], plan["tasks"]) == (True, "all")
        used = client.get("/organization/quotas").json()["expositions"]["used"]
    # the address names the new plan: a reload shows it, not the form that would create it again
    assert page.evaluate("window.location.hash") == f"#/plans?plan={plan['id']}"

    open_screen(page, "Gateways")
    quotas = page.get_by_role("table", name="Quotas of organization default")
    expect(quotas).to_contain_text("no limit")
    page.get_by_label("Quota of expositions").fill(str(used))
    page.get_by_role("button", name="Save the quotas").click()
    expect(page.get_by_role("status")).to_contain_text("Saved the quotas.")
    expect(quotas).to_contain_text("reached: new ones are refused")

    page.goto(f"{served.base}/console/#/plans?plan={plan['id']}")
    page.get_by_role("button", name="Expose").click()
    noun = "exposition" if used == 1 else "expositions"
    expect(page.get_by_role("alert")).to_contain_text(
        f"the organization's quota of {used} {noun} is reached ({used} in use); an admin can raise it"
    )
    with api(served) as client:
        assert client.put("/organization/quotas", json={"expositions": None}).status_code == 200
    assert unexpected(seen.problems, 429) == []
