"""The web console driven in Chromium: log in, import the Bookshelf description, plan, expose, try a tool;
secrets' values never shown; a wrong token refused clearly; every control labelled and reachable by keyboard."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, log_in, pick_tool, unexpected, unlabelled

SECRET_VALUE = "sk-console-test-4f9a1c7e2b"
ROTATED_VALUE = "sk-console-rotated-8d3e6b0a5f"


def test_a_wrong_token_is_refused_with_a_clear_message(page: Page, served: Served, seen: Seen) -> None:
    page.goto(f"{served.base}/console/")
    page.get_by_label("API token").fill("apimcp_admin_not-a-real-token")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("The control plane refused this token")
    expect(page.get_by_role("navigation", name="Screens")).to_be_hidden()
    assert page.evaluate("sessionStorage.length") == 0
    assert "apimcp_admin_not-a-real-token" not in page.url
    assert unexpected(seen.problems, 401) == []


def test_import_plan_expose_and_try_a_tool(page: Page, served: Served, seen: Seen) -> None:
    log_in(page, served)
    assert served.token not in page.url
    assert page.evaluate("Object.keys(sessionStorage)") == ["apimcp.console.token"]

    # import the description from a file
    page.get_by_role("link", name="Import", exact=True).click()
    page.get_by_label("Description file").set_input_files(str(spec_path()))
    page.get_by_label("Service name").fill("bookshelf")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text("Imported bookshelf 1.0.0: 11 operations")

    # its operations
    page.get_by_role("link", name="See its operations").click()
    expect(page.get_by_role("heading", name="Service bookshelf 1.0.0")).to_be_visible()
    expect(page.get_by_role("table", name="Operations")).to_contain_text("list_books")
    expect(page.get_by_role("table", name="Artifacts")).to_contain_text("main")

    # a plan calling the Bookshelf backend, without the DELETE operation
    page.get_by_role("link", name="Create a plan for this service").click()
    expect(page.get_by_role("heading", name="New plan")).to_be_visible()
    page.get_by_label("Plan name").fill("console")
    page.get_by_label("Backend URL").fill(served.backend)
    page.get_by_label("Exclude", exact=True).fill("DELETE *")
    page.get_by_label("Cache hints").fill("tools/list=60000:public")
    page.get_by_role("button", name="Create the plan").click()
    expect(page.get_by_role("heading", name="Plan console")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Created plan console")
    expect(page.get_by_label("Exclude", exact=True)).to_have_value("DELETE *")

    # a bad edit is refused with the API's words, and nothing changes
    page.get_by_label("Include", exact=True).fill("no_such_tool")
    page.get_by_role("button", name="Save the plan").click()
    expect(page.get_by_role("alert")).to_contain_text("no_such_tool")
    page.get_by_label("Include", exact=True).fill("")

    # expose it
    page.get_by_label("Exposition name").fill("shelf")
    page.get_by_role("button", name="Expose", exact=True).click()
    expect(page.get_by_role("heading", name="Exposition shelf")).to_be_visible()
    endpoints = page.get_by_role("table", name="Endpoints of shelf")
    canonical = f"{served.base}/mcp/default/shelf"
    expect(endpoints).to_contain_text(canonical)
    expect(endpoints).to_contain_text(f"{canonical}/sse")
    expect(endpoints).to_contain_text(f"{served.base}/mcp/default/bookshelf/1.0.0")
    config = json.loads(page.locator("pre.config").inner_text())
    assert config == {"mcpServers": {"shelf": {"type": "http", "url": canonical}}}

    # try a tool through the gateway, in both eras
    page.get_by_role("link", name="Try shelf").click()
    expect(page.get_by_role("heading", name="Try it")).to_be_visible()
    for era in ("2026-07-28", "2025-11-25"):
        page.get_by_label(re.compile(f"^{era}")).check()
        page.get_by_role("button", name="List its tools").click()
        expect(page.get_by_role("status")).to_contain_text(f"10 tools at {canonical}")
        pick_tool(page, "list_books")
        page.get_by_label("limit").fill("2")
        page.get_by_role("button", name="Call the tool").click()
        result = page.get_by_role("region", name="Result")
        expect(result).to_contain_text("list_books succeeded")
        expect(result).to_contain_text('"total"')

    # a tool with a required argument: the form says what is missing; then an answer from the backend
    pick_tool(page, "get_book")
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("alert")).to_contain_text("bookId is required")
    expect(page.get_by_label("bookId (required)")).to_be_focused()
    page.get_by_label("bookId (required)").fill("1")
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("region", name="Result")).to_contain_text("get_book succeeded")

    # the gateway's health
    page.get_by_role("link", name="Gateways").click()
    expect(page.locator("#healthz")).to_contain_text("ok, revision")
    expect(page.get_by_role("table", name="Gateways seen by the control plane")).to_contain_text("live")
    assert unexpected(seen.problems, 422) == []


def test_a_secret_value_never_reaches_the_page(page: Page, served: Served, seen: Seen) -> None:
    log_in(page, served)
    page.get_by_role("link", name="Secrets").click()
    page.get_by_label("Secret name").fill("shelf-key")
    page.get_by_label("Kind").select_option("api_key")
    page.get_by_label("Public field: name (required)").fill("X-Shelf-Key")
    page.get_by_label("Public field: location").fill("header")
    page.get_by_label("Secret value: value (required)").fill(SECRET_VALUE)
    page.get_by_role("button", name="Create the secret").click()
    expect(page.get_by_role("status")).to_contain_text("Created secret shelf-key (api_key)")
    secrets = page.get_by_role("table", name="Secrets")
    expect(secrets).to_contain_text("name: X-Shelf-Key")

    page.get_by_text("Set new values of shelf-key").click()
    page.get_by_label("Secret value: value", exact=True).fill(ROTATED_VALUE)
    page.get_by_role("button", name="Save the values of shelf-key").click()
    expect(page.get_by_role("status")).to_contain_text("New values of shelf-key saved")

    htmls = [page.content()]
    for screen in ("Services", "Plans", "Expositions", "Try it", "Gateways", "Secrets", "Access", "Audit"):
        page.get_by_role("link", name=screen, exact=True).click()
        expect(page.locator("section.screen")).not_to_have_attribute("aria-busy", "true")
        htmls.append(page.content())
    # a plan may use it; its value stays out of the plan's page too
    page.get_by_role("link", name="Plans", exact=True).click()
    page.get_by_role("link", name="Create a plan").click()
    expect(page.get_by_text("shelf-key (api_key)")).to_be_visible()
    htmls.append(page.content())
    for value in (SECRET_VALUE, ROTATED_VALUE):
        assert not [h for h in htmls if value in h]
        assert not [b.partition("\n")[0] for b in seen.bodies if value in b]
    assert any("/api/v1/secrets" in b for b in seen.bodies)
    stored = page.evaluate("JSON.stringify([Object.entries(sessionStorage), Object.entries(localStorage)])")
    assert SECRET_VALUE not in stored and ROTATED_VALUE not in stored
    assert unexpected(seen.problems) == []


def test_every_control_is_labelled_and_the_console_works_by_keyboard(page: Page, served: Served) -> None:
    page.goto(f"{served.base}/console/")
    assert unlabelled(page) == []
    expect(page.get_by_label("API token")).to_be_focused()
    page.keyboard.type(served.token)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1, name="Traffic")).to_be_focused()
    expect(page.get_by_role("banner")).to_be_visible()
    expect(page.get_by_role("main")).to_be_visible()

    # Tab from the top of the page reaches the navigation; Enter follows a link; focus is visible
    page.get_by_role("link", name="Skip to the content").focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent") == "Secrets":
            break
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1, name="Secrets")).to_be_focused()
    # the skip link takes the focus to the content and keeps the screen's address
    page.get_by_role("link", name="Skip to the content").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("main")).to_be_focused()
    assert page.evaluate("window.location.hash") == "#/secrets"

    screens = (
        "Traffic",
        "Services",
        "Import",
        "Plans",
        "Expositions",
        "Try it",
        "Gateways",
        "Secrets",
        "Access",
        "Audit",
    )
    for screen in screens:
        page.get_by_role("link", name=screen, exact=True).click()
        expect(page.locator("section.screen")).not_to_have_attribute("aria-busy", "true")
        assert unlabelled(page) == [], screen
    page.get_by_role("link", name="Plans", exact=True).click()
    page.get_by_role("link", name="Create a plan").click()
    expect(page.get_by_role("heading", name="New plan")).to_be_visible()
    assert unlabelled(page) == []

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_label("API token")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0


def test_console_pages_carry_a_strict_policy(page: Page, served: Served) -> None:
    response = page.goto(f"{served.base}/console/")
    assert response is not None
    headers = response.headers
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy and "unsafe" not in policy
    assert headers["x-frame-options"] == "DENY"
    html = Path(spec_path()).parents[1] / "console" / "static" / "index.html"
    assert "<script>" not in html.read_text()


PASTED = """openapi: 3.0.3
info: {title: Pasted, version: "2.0"}
paths:
  /ping:
    get:
      operationId: ping
      responses: {"200": {description: ok}}
"""


def test_a_pasted_description_is_imported_and_a_broken_one_refused_clearly(page: Page, served: Served) -> None:
    log_in(page, served)
    page.get_by_role("link", name="Import", exact=True).click()
    page.get_by_label("Source").select_option("paste")
    page.get_by_label("Description text").fill("<script>alert(1)</script>: [")
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert")).not_to_be_empty()
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # main.js alone, alert region included
    page.get_by_label("Description text").fill(PASTED)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text("Imported Pasted 2.0: 1 operation.")
    page.get_by_role("link", name="Services").click()
    expect(page.get_by_role("table", name="Services")).to_contain_text("Pasted")


MARKUP = '<img src=x onerror="window.pwned=1">'
MARKED_UP = f"""openapi: 3.0.3
info: {{title: marked-up, version: "1.0", description: '{MARKUP}'}}
paths:
  /ping:
    get:
      operationId: ping
      summary: '<script>window.pwned=2</script>'
      tags: ['{MARKUP}']
      responses: {{"200": {{description: ok}}}}
"""


def test_markup_the_api_returns_stays_text(page: Page, served: Served, seen: Seen) -> None:
    """A description's title, description, summary and tags hold markup: the console shows it as text."""
    log_in(page, served)
    page.get_by_role("link", name="Import", exact=True).click()
    page.get_by_label("Source").select_option("paste")
    page.get_by_label("Description text").fill(MARKED_UP)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("status")).to_contain_text("Imported marked-up 1.0")
    page.get_by_role("link", name="See its operations").click()
    expect(page.get_by_role("heading", name="Service marked-up 1.0")).to_be_visible()
    expect(page.locator("main p").get_by_text(MARKUP, exact=True)).to_be_visible()  # the description, as text
    operations = page.get_by_role("table", name="Operations")
    expect(operations).to_contain_text("<script>window.pwned=2</script>")
    expect(operations).to_contain_text(MARKUP)
    assert page.evaluate("document.querySelectorAll('img, main script').length") == 0
    assert page.evaluate("window.pwned") is None
    assert unexpected(seen.problems) == []


def test_the_console_builds_no_url_but_its_own(page: Page, served: Served) -> None:
    """dom.js refuses any href but a screen's `#/...` and any src but a raster data: URL, and text listeners;
    its external links are http(s) only."""
    page.goto(f"{served.base}/console/")
    outcomes = page.evaluate(
        """async () => {
            const { externalLink, h } = await import("./dom.js");
            const attempt = (props, tag = "a") => {
                try { h(tag, props); return "built"; } catch (e) { return e.message; }
            };
            const link = (url) => {
                try { return externalLink(url, "x").getAttribute("href"); } catch (e) { return e.message; }
            };
            return [
                attempt({ href: "#/plans?plan=1" }),
                attempt({ href: "javascript:alert(1)" }),
                attempt({ href: " javascript:alert(1)" }),
                attempt({ href: "https://evil.example/" }),
                attempt({ src: "data:image/png;base64,iVBORw0KGgo=" }, "img"),
                attempt({ src: "data:image/svg+xml;base64,PHN2Zz4=" }, "img"),
                attempt({ src: 'data:image/png;base64,x" onerror="alert(1)' }, "img"),
                attempt({ onclick: "alert(1)" }, "button"),
                link("javascript:alert(1)"),
                link("data:text/html,x"),
                link("https://example.com/a b"),
            ];
        }"""
    )
    assert outcomes[0] == "built" and outcomes[4] == "built" and outcomes[-1] == "https://example.com/a%20b"
    refused = [o for i, o in enumerate(outcomes[:-1]) if i not in (0, 4)]
    assert all(o.startswith("refused ") for o in refused), outcomes
