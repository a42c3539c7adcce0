"""The Approvals screen, driven in Chromium: an admin sees the calls waiting for an administrator (submitted as a
gateway submits them), approves one (the screen says so, the API agrees), is told in the API's words that a request
decided meanwhile is no longer pending, and finds the decided ones by status; a viewer reads them, without
Approve or Refuse."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, issue_token, log_in, open_screen, unexpected, unlabelled

PENDING = "Pending approval requests, newest first"


@pytest.fixture(scope="module")
def exposition(served: Served) -> str:
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "shelf-approvals"}
        )
        assert imported.status_code == 201, imported.text
        plan = client.post("/plans", json={"name": "guarded", "service_id": imported.json()["id"]})
        assert plan.status_code == 201, plan.text
        exposed = client.post("/expositions", json={"plan_id": plan.json()["id"], "name": "guarded"})
        assert exposed.status_code == 201, exposed.text
        exposition_id: str = exposed.json()["id"]
    return exposition_id


def _submit(served: Served, exposition: str, book: str) -> dict[str, Any]:
    """A pending request, made as a gateway makes it (`POST /gateway/approvals` with a gateway token)."""
    call = {"exposition": exposition, "tool": "delete_book", "digest": book * 64, "caller": "https://idp.example ann",
            "question": f"Approve delete_book with bookId={book}?", "lifetime": 600}  # fmt: skip
    with api(served, issue_token(served, f"edge-{book}", "gateway")) as gateway:
        answer = gateway.post("/gateway/approvals", json=call)
    assert answer.status_code == 200, answer.text
    pending: dict[str, Any] = answer.json()
    assert pending["status"] == "pending"
    return pending


def test_an_admin_approves_a_waiting_call(served: Served, exposition: str, page: Page, seen: Seen) -> None:
    first, second = _submit(served, exposition, "1"), _submit(served, exposition, "2")
    log_in(page, served)
    open_screen(page, "Approvals")
    waiting = page.get_by_role("table", name=PENDING)
    row = waiting.get_by_role("row").filter(has_text="bookId=1")
    expect(row).to_contain_text("Approve delete_book with bookId=1?")
    expect(row).to_contain_text("guarded")
    expect(row).to_contain_text("https://idp.example ann")
    assert unlabelled(page) == []

    page.get_by_role("button", name=f"Approve delete_book ({first['id']})", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text(f"Approved delete_book ({first['id']}).")
    expect(page.get_by_role("heading", level=1, name="Approvals")).to_be_focused()
    expect(waiting).not_to_contain_text("bookId=1")
    with api(served) as client:
        approved = {a["id"]: a for a in client.get("/approvals", params={"status": "approved"}).json()}[first["id"]]
        assert approved["decided_by"].startswith("token ")
        # decided elsewhere meanwhile: the screen's button is stale, and the 409 says why
        assert client.post(f"/approvals/{second['id']}/refuse").status_code == 200
    page.get_by_role("button", name=f"Approve delete_book ({second['id']})", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text(f"approval request '{second['id']}' is refused already")

    page.get_by_label("Status").select_option("refused")
    page.get_by_role("button", name="Show the requests").click()
    refused = page.get_by_role("table", name="Refused approval requests, newest first")
    expect(refused.get_by_role("row").filter(has_text="bookId=2")).to_contain_text(approved["decided_by"])
    assert page.evaluate("window.location.hash") == "#/approvals?status=refused"
    expect(refused.get_by_role("button")).to_have_count(0)
    assert unexpected(seen.problems, 409) == []


def test_a_viewer_reads_the_requests_but_decides_none(served: Served, exposition: str, page: Page, seen: Seen) -> None:
    waiting = _submit(served, exposition, "3")
    log_in(page, Served(served.base, issue_token(served, "viewer-approvals", "viewer"), served.backend))
    open_screen(page, "Approvals")
    expect(page.get_by_text("You have the viewer role: approving and refusing need the admin role.")).to_be_visible()
    expect(page.get_by_role("table", name=PENDING)).to_contain_text("Approve delete_book with bookId=3?")
    expect(page.get_by_role("button", name="Approve", exact=False)).to_have_count(0)
    expect(page.get_by_role("button", name="Refuse", exact=False)).to_have_count(0)
    expect(page.get_by_label("Status")).to_be_enabled()  # reading by status is a viewer's too
    with api(served) as client:
        assert [a["id"] for a in client.get("/approvals").json()].count(waiting["id"]) == 1
    assert unexpected(seen.problems) == []
