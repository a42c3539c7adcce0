"""Try it beyond tools, in Chromium against the real gateway: a prompt with its argument, a resource and a
resource template's URI, a raw JSON-RPC message with its headers and timing, the page's record of recent requests
(kept across screens, copied as curl without the API key), and an approval a policy asks for, answered in the
page (2026-07-28) or refused clearly (a 2025-11-25 session: the console cannot answer in a session)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, open_screen, pick_tool, serving, unexpected, unlabelled

ARTIFACTS = spec_path().parent / "artifacts"


@pytest.fixture(scope="module")
def shelf(served: Served) -> str:
    """Bookshelf with its prompts and resources, exposed as `tried`, whose policy asks approval of deletions."""
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "bookshelf"}
        )
        assert imported.status_code == 201, imported.text
        service_id = imported.json()["id"]
        for name in ("prompts", "resources"):
            attached = client.post(
                f"/services/{service_id}/artifacts",
                files={"file": (f"{name}.yaml", (ARTIFACTS / f"{name}.yaml").read_bytes())},
                data={"name": name},
            )
            assert attached.status_code == 201, attached.text
        rule = {"name": "ask-before-deleting", "when": 'tool.method == "DELETE"', "effect": "approve",
                "message": "Deleting cannot be undone."}  # fmt: skip
        body = {"name": "tried", "service_id": service_id, "backend_endpoint": served.backend, "policies": [rule]}
        plan = client.post("/plans", json=body)
        assert plan.status_code == 201, plan.text
        assert client.post("/expositions", json={"plan_id": plan.json()["id"], "name": "tried"}).status_code == 201
    serving(f"{served.base}/mcp/default/tried")
    return "tried"


def _connect(page: Page, exposition: str, era: str | None = None) -> None:
    open_screen(page, "Try it")
    page.get_by_label("Exposition").select_option(label=exposition)
    if era is not None:
        page.get_by_label(era, exact=False).check()
    page.get_by_role("button", name="List its tools").click()
    expect(page.get_by_role("status")).to_contain_text("tools at")


def test_prompts_resources_templates_and_raw_json_rpc(page: Page, served: Served, shelf: str, seen: Seen) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served.base)
    log_in(page, served)
    _connect(page, shelf)
    assert unlabelled(page) == []
    result = page.get_by_role("region", name="Result")

    page.get_by_label("Prompt", exact=True).select_option(label="recommend_books")
    page.get_by_label("mood (required)").fill("curious")
    page.get_by_role("button", name="Get the prompt").click()
    expect(result).to_contain_text("recommend_books: 1 messages")
    expect(result).to_contain_text("a reader who feels curious today")

    page.get_by_label("Resource", exact=True).select_option(label="house-rules (note://bookshelf/house-rules)")
    page.get_by_role("button", name="Read the resource").click()
    expect(result).to_contain_text("# House rules")
    page.get_by_label("Resource", exact=True).select_option(label="book (template file:///books/{bookId})")
    page.get_by_label("bookId", exact=True).fill("1")
    page.get_by_role("button", name="Read the resource").click()
    expect(result).to_contain_text("file:///books/1: 1 contents")

    page.get_by_label("Message", exact=True).fill(page.get_by_label("Message", exact=True).input_value().replace(
        '"tools/list"', '"prompts/list"'))  # fmt: skip
    page.get_by_role("button", name="Send the message").click()
    expect(result).to_contain_text("HTTP 200 in")
    expect(result).to_contain_text("Mcp-Method: prompts/list")
    expect(result).to_contain_text("recommend_books")

    # the record keeps every request, across screens, and copies one as curl without any secret
    open_screen(page, "Services")
    open_screen(page, "Try it")
    recent = page.get_by_role("region", name="Recent requests (", exact=False)
    expect(recent.locator("summary").first).to_contain_text("prompts/list · HTTP 200")
    recent.locator("summary").first.click()
    recent.get_by_role("button", name="Copy as curl").first.click()
    curl = page.evaluate("navigator.clipboard.readText()")
    assert curl.startswith("curl -sS -X POST") and "prompts/list" in curl and "mcp-protocol-version" in curl.lower()
    kept = page.evaluate("sessionStorage.getItem('apimcp.console.recent')")
    assert served.token not in kept and len(json.loads(kept)) >= 5
    # logging out forgets the record (whole requests and answers): whoever signs in next in this tab does not see it
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("API token")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('apimcp.console.recent')") is None
    assert unexpected(seen.problems) == []


def test_an_approval_is_asked_in_the_page_and_refused_clearly_in_a_session(
    page: Page, served: Served, shelf: str, seen: Seen
) -> None:
    log_in(page, served)
    _connect(page, shelf)
    pick_tool(page, "delete_book")
    page.get_by_label("bookId (required)").fill("2")
    page.get_by_role("button", name="Call the tool").click()
    asked = page.get_by_role("form", name="The server asks")
    expect(asked).to_contain_text("Deleting cannot be undone.")
    asked.get_by_label("Approve this call (required)").check()
    asked.get_by_role("button", name="Accept").click()
    expect(page.get_by_role("region", name="Result")).to_contain_text("delete_book succeeded")
    expect(asked).to_have_count(0)

    pick_tool(page, "delete_book")
    page.get_by_label("bookId (required)").fill("3")
    page.get_by_role("button", name="Call the tool").click()
    page.get_by_role("form", name="The server asks").get_by_role("button", name="Decline").click()
    expect(page.get_by_role("alert")).to_contain_text("delete_book reported an error")

    open_screen(page, "Services")  # and back: a fresh Try it screen
    _connect(page, shelf, era="2025-11-25")
    pick_tool(page, "delete_book")
    page.get_by_label("bookId (required)").fill("4")
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("alert")).to_contain_text("approval")
    assert unexpected(seen.problems) == []
