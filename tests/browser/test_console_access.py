"""The console's Access and Audit screens and its edits, driven in Chromium: an API token shown once and never
again, then revoked and refused; a user token refused what needs an admin, in the API's words; a gateway key
registered and revoked; audit events of calls made through the gateway, of a rate limit's refusals and of a
script's calls; an exposition renamed (its new URL serves), a gateway group edited and deleted, a plan duplicated;
every control of these screens labelled."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from apimcp.demo_api import spec_path
from apimcp.sealing.keys import GatewayKey
from tests.browser.conftest import TIMEOUT_MS, Seen, Served, api, log_in, open_screen, serving, unexpected, unlabelled
from tests.support.mcp_http import McpHttp


@dataclass(frozen=True)
class Catalog:
    service_id: str
    plan_id: str
    exposition_id: str


@pytest.fixture(scope="module")
def catalog(served: Served) -> Catalog:
    """Bookshelf imported, a plan that audits calling the backend, exposed as `audited` (set up by the API)."""
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "bookshelf"}
        )
        assert imported.status_code == 201, imported.text
        service_id = imported.json()["id"]
        plan = client.post(
            "/plans",
            json={"name": "audited", "service_id": service_id, "backend_endpoint": served.backend, "audit": True},
        )
        assert plan.status_code == 201, plan.text
        exposition = client.post("/expositions", json={"plan_id": plan.json()["id"], "name": "audited"})
        assert exposition.status_code == 201, exposition.text
    return Catalog(service_id, plan.json()["id"], exposition.json()["id"])


def accept_dialogs(page: Page) -> None:
    page.on("dialog", lambda dialog: dialog.accept())


def test_a_token_is_shown_once_then_revoked_and_refused(
    page: Page, browser: Browser, served: Served, seen: Seen
) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base)
    accept_dialogs(page)
    log_in(page, served)
    open_screen(page, "Access")
    expect(page.get_by_role("table", name="API tokens")).to_contain_text("(this session)")
    page.get_by_label("Token name").fill("ci-robot")
    page.get_by_label("Token kind").select_option("user")
    page.get_by_label("Valid for (days)").fill("30")
    page.get_by_role("button", name="Create the token").click()
    expect(page.get_by_role("status")).to_contain_text("Created the user token ci-robot")
    shown = page.locator("#token-once")
    value = shown.inner_text()
    assert value.startswith("apimcp_user_") and len(value) > 40
    expect(page.get_by_role("heading", name="The token ci-robot")).to_be_focused()
    page.get_by_role("button", name="Copy the token").click()
    expect(page.get_by_role("status")).to_contain_text("Copied to the clipboard")
    assert page.evaluate("navigator.clipboard.readText()") == value
    row = page.get_by_role("row").filter(has_text="ci-robot")
    expect(row).to_contain_text("active")
    expect(row).not_to_contain_text(value)

    # gone from the page once the screen is left, and in no later page, response or storage
    htmls = []
    for screen in ("Services", "Access", "Audit", "Access"):
        open_screen(page, screen)
        htmls.append(page.content())
    expect(page.get_by_role("table", name="API tokens")).to_contain_text("ci-robot")
    assert not [h for h in htmls if value in h]
    carrying = [b.partition("\n")[0] for b in seen.bodies if value in b]
    assert carrying == [f"{served.base}/api/v1/tokens"]  # the answer to POST /tokens, the once
    stored = page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    assert value not in stored
    with api(served, value) as as_robot:
        assert as_robot.get("/organization").status_code == 200

    # a user token may not do what needs an admin: the console shows the API's words
    other = browser.new_context()
    other.set_default_timeout(TIMEOUT_MS)
    try:
        robot = other.new_page()
        log_in(robot, Served(served.base, value, served.backend))
        open_screen(robot, "Access")
        robot.get_by_label("Token name").fill("escalate")
        robot.get_by_label("Token kind").select_option("admin")
        robot.get_by_role("button", name="Create the token").click()
        expect(robot.get_by_role("alert")).to_contain_text("Forbidden: ")
        expect(robot.get_by_role("alert")).to_contain_text("needs the admin role in organization default")
        robot.get_by_label("Key name").fill("site-a")
        robot.get_by_label("Public key").fill(GatewayKey.generate().public.text)
        robot.get_by_role("button", name="Register the key").click()
        expect(robot.get_by_role("alert")).to_contain_text("POST /api/v1/gateway-keys needs the admin role")

        # revoked from the admin's console: the API refuses it at once, and its console logs out
        page.get_by_role("button", name="Revoke the token ci-robot").click()
        expect(page.get_by_role("status")).to_contain_text("Revoked the token ci-robot")
        expect(page.get_by_role("row").filter(has_text="ci-robot")).to_contain_text("revoked")
        expect(page.get_by_role("button", name="Revoke the token ci-robot")).to_have_count(0)
        with api(served, value) as as_robot:
            refused = as_robot.get("/organization")
        assert refused.status_code == 401 and refused.json()["detail"] == "unknown or revoked token"
        robot.get_by_role("link", name="Audit", exact=True).click()
        expect(robot.get_by_role("alert")).to_contain_text("no longer accepts the token")
        expect(robot.get_by_label("API token")).to_be_visible()
    finally:
        other.close()
    assert unexpected(seen.problems) == []


def test_a_gateway_key_is_registered_and_revoked(page: Page, served: Served, seen: Seen) -> None:
    accept_dialogs(page)
    log_in(page, served)
    open_screen(page, "Access")
    assert unlabelled(page) == []
    key = GatewayKey.generate().public
    page.get_by_label("Key name").fill("site-b")
    page.get_by_label("Public key").fill("not-a-key")
    page.get_by_role("button", name="Register the key").click()
    expect(page.get_by_role("alert")).to_contain_text("a gateway public key is 32 bytes in base64url")
    page.get_by_label("Public key").fill(key.text)
    page.get_by_role("button", name="Register the key").click()
    expect(page.get_by_role("status")).to_contain_text(f"Registered the gateway key site-b ({key.fingerprint})")
    keys = page.get_by_role("table", name="Gateway keys")
    expect(keys).to_contain_text(key.fingerprint)
    expect(keys).to_contain_text(key.text)
    page.get_by_label("Key name").fill("site-b-again")
    page.get_by_label("Public key").fill(key.text)
    page.get_by_role("button", name="Register the key").click()
    expect(page.get_by_role("alert")).to_contain_text("this key is already registered as 'site-b'")

    page.get_by_role("button", name="Revoke the gateway key site-b").click()
    expect(page.get_by_role("status")).to_contain_text("Revoked the gateway key site-b")
    expect(keys.get_by_role("row").filter(has_text="site-b")).to_contain_text("revoked")
    with api(served) as client:
        (listed,) = [k for k in client.get("/gateway-keys").json() if k["name"] == "site-b"]
    assert listed["revoked_at"] is not None
    assert unexpected(seen.problems, 403, 409, 422) == []


def audit_screen_of(page: Page, served: Served, exposition: str, events: int) -> Locator:
    """The Audit screen's table of `exposition`, once the gateway reported at least `events` of its events."""
    deadline = time.monotonic() + 10
    with api(served) as plane:
        while len(plane.get("/audit", params={"exposition": exposition}).json()) < events:
            assert time.monotonic() < deadline, "the audit events were not reported"
            time.sleep(0.2)
    log_in(page, served)
    open_screen(page, "Audit")
    page.get_by_label("Exposition").select_option(label=exposition)
    page.get_by_role("button", name="Show the events").click()
    return page.get_by_role("table", name=f"Audit events of {exposition}, newest first")


def test_audit_events_of_calls_through_the_gateway(page: Page, served: Served, catalog: Catalog, seen: Seen) -> None:
    canonical = f"{served.base}/mcp/default/audited"
    assert len(serving(canonical)["tools"]) == 11
    with McpHttp(canonical) as client:
        called = client.modern(
            "tools/call", {"name": "list_books", "arguments": {"limit": 1}}, headers={"Mcp-Name": "list_books"}
        )
        assert called.status == 200, called.text
    events = audit_screen_of(page, served, "audited", 2)
    assert unlabelled(page) == []
    expect(events).to_contain_text("tools/call")
    expect(events).to_contain_text("list_books")
    expect(events).to_contain_text("tools/list")
    expect(events).to_contain_text("success")
    assert f"exposition={catalog.exposition_id}" in page.url

    # bounded: at most as many as asked, the newest first
    page.get_by_label("At most").fill("1")
    page.get_by_role("button", name="Show the events").click()
    expect(page.get_by_role("table", name="Audit events of audited, newest first (1, the limit)")).to_be_visible()
    expect(page.locator("table tbody tr")).to_have_count(1)
    expect(page.locator("table tbody tr")).to_contain_text("tools/call")
    expect(page.get_by_label("At most")).to_have_attribute("max", "10000")
    assert unexpected(seen.problems) == []


SHELF_TWICE = """apiVersion: reshapr.io/v1alpha1
kind: CustomTools
service: {{name: scripted, version: "{version}"}}
customTools:
  shelf_twice:
    description: lists the books twice
    input: {{type: object}}
    tools: [{{tool: list_books}}]
    script: |
      const first = rs.callTool("list_books", {{limit: 1}});
      const second = rs.callTool("list_books", {{limit: 1}});
      return [first.ok, second.ok ? "read" : second.error.message];
"""


def test_the_audit_screen_shows_rate_limit_refusals_and_script_calls(page: Page, served: Served, seen: Seen) -> None:
    """Finding: the screen said its events were MCP requests and refused authentications only, and showed neither a
    rate limit's refusal (its reason and when to retry) nor which script made a call."""
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "scripted"}
        ).json()
        tools = SHELF_TWICE.format(version=imported["version"])
        twice = {"file": ("twice.yaml", tools.encode())}
        attached = client.post(f"/services/{imported['id']}/artifacts", files=twice, data={"name": "twice"})
        assert attached.status_code == 201, attached.text
        limited = {"name": "limited", "service_id": imported["id"], "backend_endpoint": served.backend, "audit": True,
                   "rate_limit": {"caller": "3/min"}}  # fmt: skip
        plan = client.post("/plans", json=limited)
        assert plan.status_code == 201, plan.text
        exposed = client.post("/expositions", json={"plan_id": plan.json()["id"], "name": "limited"})
        assert exposed.status_code == 201, exposed.text
    url = f"{served.base}/mcp/default/limited"
    assert "shelf_twice" in [tool["name"] for tool in serving(url)["tools"]]  # the caller's first of three
    with McpHttp(url) as client:
        script = client.modern("tools/call", {"name": "shelf_twice", "arguments": {}})  # second; its calls the third
        direct = client.modern("tools/call", {"name": "list_books", "arguments": {"limit": 1}})
    assert script.status == 200 and direct.status == 429
    assert "Rate limit per caller of exposition 'limited' reached" in script.result["content"][0]["text"]
    events = audit_screen_of(page, served, "limited", 5)
    expect(page.get_by_text("refused: by authentication (HTTP 401 or 403) or by a rate limit")).to_be_visible()
    expect(events.get_by_role("columnheader", name="Via")).to_be_visible()
    at_the_door = events.get_by_role("row").filter(has_text="/mcp/default/limited")  # refused before it was read
    expect(at_the_door).to_contain_text("rate_limit")
    expect(at_the_door).to_contain_text("refused")
    expect(at_the_door).to_contain_text(re.compile(r"caller_rate_limit, HTTP 429, retry after \d+ s"))
    inner = events.get_by_role("row").filter(has_text="list_books").filter(has_text="shelf_twice")
    expect(inner).to_have_count(2)  # the script's two calls, named by the custom tool that made them
    expect(inner.filter(has_text="refused")).to_contain_text("caller_rate_limit, HTTP 429, retry after 20 s")
    expect(inner.filter(has_text="success")).to_have_count(1)

    # Finding M4 (issue 21): beyond the first few refusals alike in a minute, a gateway reports one event counting
    # the rest; the screen shows how many it stands for, and lists the refusals apart.
    with api(served) as client:
        gateway = client.post("/tokens", json={"name": "edge", "kind": "gateway"}).json()["token"]
    summary = {"time": time.time(), "action": "authentication", "target": "/mcp/default/limited",
               "outcome": "failure", "reason": "invalid_token", "status": 401, "exposition_id": exposed.json()["id"],
               "exposition": "limited", "client": "203.0.113.9", "count": 137, "first_time": time.time() - 59,
               "last_time": time.time()}  # fmt: skip
    with api(served, gateway) as edge:
        assert edge.post("/gateway/audit", json={"events": [summary]}).status_code == 202
    page.get_by_label("Kind").select_option(label="refusals")
    page.get_by_role("button", name="Show the events").click()
    expect(events.get_by_role("columnheader", name="Count")).to_be_visible()
    counted = events.get_by_role("row").filter(has_text="203.0.113.9")
    expect(counted).to_contain_text("\u00d7137")  # the multiplication sign, 137
    expect(counted).to_contain_text(re.compile(r"invalid_token, HTTP 401, 137 times, .+ to "))
    expect(events.get_by_role("row").filter(has_text="success")).to_have_count(0)  # refusals only
    assert "refused=true" in page.url
    assert unexpected(seen.problems) == []


def test_an_exposition_renamed_serves_at_its_new_url(page: Page, served: Served, catalog: Catalog, seen: Seen) -> None:
    with api(served) as client:
        made = client.post("/expositions", json={"plan_id": catalog.plan_id, "name": "moving"})
        assert made.status_code == 201, made.text
    serving(f"{served.base}/mcp/default/moving")
    log_in(page, served)
    page.goto(f"{served.base}/console/#/expositions?exposition={made.json()['id']}")
    expect(page.get_by_role("heading", name="Exposition moving")).to_be_visible()
    page.get_by_text("Edit the exposition moving").click()
    assert unlabelled(page) == []
    page.get_by_label("Name of moving").fill("audited")
    page.get_by_role("button", name="Save the exposition moving").click()
    expect(page.get_by_role("alert")).to_contain_text("audited")  # taken: the API's words
    page.get_by_label("Name of moving").fill("moved")
    page.get_by_role("button", name="Save the exposition moving").click()
    moved = f"{served.base}/mcp/default/moved"
    expect(page.get_by_role("status")).to_contain_text(f"Saved the exposition moved (name): now at {moved}")
    endpoints = page.get_by_role("table", name="Endpoints of moved")
    expect(endpoints).to_contain_text(moved)
    expect(endpoints).not_to_contain_text("/mcp/default/moving")
    assert len(serving(moved)["tools"]) == 11
    deadline = time.monotonic() + 10
    with McpHttp(f"{served.base}/mcp/default/moving") as old:
        while old.modern("tools/list").status != 404:
            assert time.monotonic() < deadline, "the old name still serves"
            time.sleep(0.1)
    assert unexpected(seen.problems, 409) == []


def test_a_gateway_group_is_edited_and_deleted(page: Page, served: Served, catalog: Catalog, seen: Seen) -> None:
    accept_dialogs(page)
    log_in(page, served)
    open_screen(page, "Gateways")
    page.get_by_label("Group name").fill("edge")
    page.get_by_label("Labels", exact=True).fill("site=a")
    page.get_by_role("button", name="Create the group").click()
    expect(page.get_by_role("status")).to_contain_text("Created gateway group edge")
    assert unlabelled(page) == []
    groups = page.get_by_role("table", name="Gateway groups")
    page.get_by_text("Edit the labels of edge").click()
    page.get_by_label("Labels of edge").fill("site=b, tier=1")
    page.get_by_role("button", name="Save the labels of edge").click()
    expect(page.get_by_role("status")).to_contain_text("Saved the labels of edge: site=b, tier=1")
    expect(groups.get_by_role("row").filter(has_text="edge")).to_contain_text("site=b, tier=1")
    page.get_by_text("Edit the labels of edge").click()
    page.get_by_label("Labels of edge").fill("tier")
    page.get_by_role("button", name="Save the labels of edge").click()
    expect(page.get_by_role("alert")).to_contain_text('label "tier" must read key=value')

    page.get_by_role("button", name="Delete the group default").click()
    expect(page.get_by_role("alert")).to_contain_text("gateway group 'default' still has expositions")
    page.get_by_role("button", name="Delete the group edge").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted the gateway group edge")
    expect(groups).not_to_contain_text("edge")
    with api(served) as client:
        assert [g["name"] for g in client.get("/gateway-groups").json()] == ["default"]
    assert unexpected(seen.problems, 409) == []


def test_a_plan_is_duplicated(page: Page, served: Served, catalog: Catalog, seen: Seen) -> None:
    log_in(page, served)
    page.goto(f"{served.base}/console/#/plans?plan={catalog.plan_id}")
    expect(page.get_by_role("heading", level=1, name="Plan audited")).to_be_visible()
    assert unlabelled(page) == []
    page.get_by_label("Name of the copy").fill("audited")
    page.get_by_role("button", name="Duplicate plan audited").click()
    expect(page.get_by_role("alert")).to_contain_text("audited")  # the name is taken: the API says so
    page.get_by_label("Name of the copy").fill("audited-copy")
    page.get_by_role("button", name="Duplicate plan audited").click()
    expect(page.get_by_role("heading", level=1, name="Plan audited-copy")).to_be_focused()
    expect(page.get_by_role("status")).to_contain_text("Duplicated plan audited as audited-copy")
    expect(page.get_by_label("Audit every request")).to_be_checked()
    expect(page.get_by_label("Backend URL")).to_have_value(served.backend)
    with api(served) as client:
        (copy,) = [p for p in client.get("/plans").json() if p["name"] == "audited-copy"]
    assert copy["audit"] is True and copy["service_id"] == catalog.service_id
    assert page.url.endswith(f"#/plans?plan={copy['id']}")
    assert unexpected(seen.problems, 409) == []
