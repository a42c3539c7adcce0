"""A plan's settings edited through the console's structured forms (rate limits, header policy, OAuth, tasks,
policy rules and approvals) reach the REST API as the values the API takes, read back into the same forms, and a
value the API refuses is named next to the editor it is about."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, unexpected, unlabelled


def test_structured_settings_are_saved_read_back_and_refusals_shown_in_place(
    page: Page, served: Served, seen: Seen
) -> None:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-forms"}
        )
        assert imported.status_code == 201, imported.text
        plan = client.post("/plans", json={"name": "formed", "service_id": imported.json()["id"]}).json()

    log_in(page, served)
    page.goto(f"{served.base}/console/#/plans?plan={plan['id']}")
    caller = page.get_by_role("group", name="Each caller")
    caller.get_by_label("Requests").fill("5")
    caller.get_by_label("Per").select_option(label="minute")
    page.get_by_label("Headers never passed on").fill("x-debug")
    page.get_by_label("Headers renamed").fill("x-tenant=x-org")
    page.get_by_label("Tasks", exact=True).select_option("slow")
    page.get_by_label("After (ms)").fill("2000")
    policies = page.get_by_role("group", name="Policies and approvals")
    policies.get_by_role("button", name="Ask approval for tools that change something").click()
    policies.get_by_role("button", name="Add a rule").click()
    policies.get_by_label("Rule name").nth(1).fill("no-deletes")
    policies.get_by_label("When (CEL)").nth(1).fill('tool.method == "DELETE"')
    policies.get_by_label("Message").nth(1).fill("Deleting is not allowed.")
    assert unlabelled(page) == []
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan formed")

    with api(served) as client:
        saved = client.get(f"/plans/{plan['id']}").json()
    assert saved["rate_limit"] == {"caller": {"requests": 5, "per_seconds": 60.0, "burst": 5}}
    assert saved["header_policy"]["deny"] == ["x-debug"] and saved["header_policy"]["rename"] == {"x-tenant": "x-org"}
    assert saved["tasks"] == "slow:2s"
    assert [(rule["name"], rule["effect"]) for rule in saved["policies"]] == [
        ("approve-changes", "approve"),
        ("no-deletes", "deny"),
    ]
    # the forms read the saved values back
    expect(page.get_by_role("group", name="Each caller").get_by_label("Requests")).to_have_value("5")
    expect(page.get_by_label("After (ms)")).to_have_value("2000")
    expect(page.get_by_role("group", name="Policies and approvals").get_by_label("Rule name").nth(1)).to_have_value(
        "no-deletes"
    )

    # a refusal is named next to its editor
    page.get_by_role("group", name="Policies and approvals").get_by_label("When (CEL)").nth(1).fill("tool.method ==")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("alert")).to_contain_text("policies")
    in_place = page.get_by_role("group", name="Policies and approvals").locator(".field-error")
    expect(in_place).to_contain_text("no-deletes")
    page.get_by_role("group", name="Policies and approvals").get_by_label("When (CEL)").nth(1).fill(
        'tool.method == "DELETE"'
    )

    page.get_by_label("Who may call").select_option("oauth")
    page.get_by_label("Authorization servers (issuers)").fill("not a url")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("group", name="OAuth").locator(".field-error")).to_be_visible()
    expect(page.get_by_role("group", name="Policies and approvals").locator(".field-error")).to_have_count(0)
    page.get_by_label("Authorization servers (issuers)").fill("https://login.example.com/")
    page.get_by_label("Scopes every call needs").fill("books.read")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan formed")
    with api(served) as client:
        oauth = client.get(f"/plans/{plan['id']}").json()["oauth"]
    assert oauth["issuers"] == ["https://login.example.com/"] and oauth["scopes"] == ["books.read"]
    assert unexpected(seen.problems, 422) == []


def test_a_rule_asking_an_administrator_keeps_its_approver_when_the_plan_is_saved(
    page: Page, served: Served, seen: Seen
) -> None:
    """The finding: the rule editor never read `approver` back, so saving any change to a plan's policies made an
    administrator's approval the caller's own."""
    rule = {"name": "admin-approves-deletes", "when": 'tool.method == "DELETE"', "effect": "approve",
            "message": "Deleting needs an admin.", "approver": "admin"}  # fmt: skip
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-approver"}
        )
        plan = client.post("/plans", json={"name": "guarded", "service_id": imported.json()["id"],
                                           "policies": [rule]}).json()  # fmt: skip
    log_in(page, served)
    page.goto(f"{served.base}/console/#/plans?plan={plan['id']}")
    policies = page.get_by_role("group", name="Policies and approvals")
    expect(policies.get_by_label("Who approves")).to_have_value("admin")
    policies.get_by_role("button", name="Add a rule").click()
    policies.get_by_label("Rule name").nth(1).fill("deny-nothing")
    policies.get_by_label("When (CEL)").nth(1).fill("false")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan guarded")
    with api(served) as client:
        saved = client.get(f"/plans/{plan['id']}").json()["policies"]
    assert [(r["name"], r.get("approver")) for r in saved] == [
        ("admin-approves-deletes", "admin"),
        ("deny-nothing", None),
    ]
    page.get_by_role("group", name="Policies and approvals").get_by_label("Who approves").first.select_option("caller")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("status")).to_contain_text("Saved plan guarded")
    with api(served) as client:
        assert "approver" not in client.get(f"/plans/{plan['id']}").json()["policies"][0]
    assert unexpected(seen.problems) == []
