"""What the console shows, where and how, driven in Chromium: hidden controls stay hidden, detaching an artifact
that expositions serve is confirmed first, no screen scrolls sideways at a phone's width, a tool's error is
announced as one, messages go away and cover nothing, tool descriptions keep their lines and a little Markdown
(and no markup), every column header has a name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
import pytest
from playwright.sync_api import Page, Route, expect

from apimcp.demo_api import spec_path
from tests.browser.conftest import Seen, Served, api, log_in, open_screen, pick_tool, serving, unexpected

NOTES = """openapi: 3.0.3
info: {title: notes, version: "1.0"}
paths:
  /note:
    get:
      operationId: readNote
      description: |
        First line
        second line

        Uses `a_code`, **bold** and *emphasis*; see [the docs](https://example.com/docs) or [this](javascript:go).

        - one
        - two

        <script>window.pwned=1</script><img src=x onerror="window.pwned=2">
      responses: {"200": {description: ok}}
"""


@dataclass(frozen=True)
class Shelf:
    service_id: str
    plan_id: str


@pytest.fixture(scope="module")
def shelf(served: Served) -> Shelf:
    """Bookshelf with a Prompts artifact, exposed as `shelf` (no inbound key) and `keyed` (an API key); a `notes`
    service whose tool's description holds Markdown and markup, exposed as `notes`; a secret."""
    with api(served) as client:
        imported = client.post(
            "/services", files={"file": ("openapi.yaml", spec_path().read_bytes())}, data={"name": "bookshelf"}
        ).json()
        service_id = imported["id"]
        hints = {
            "apiVersion": "reshapr.io/v1alpha1",
            "kind": "Prompts",
            "service": {"name": imported["name"], "version": imported["version"]},
            "prompts": {"hello": {"result": "Be brief."}},
        }
        attached = client.post(
            f"/services/{service_id}/artifacts",
            files={"file": ("hints.yaml", orjson.dumps(hints))},
            data={"name": "hints"},
        )
        assert attached.status_code == 201, attached.text
        notes = client.post("/services", files={"file": ("notes.yaml", NOTES.encode())}).json()
        plan_id = ""
        for name, service, inbound in (("shelf", service_id, "none"), ("keyed", service_id, "api_key"),
                                       ("notes", notes["id"], "none")):  # fmt: skip
            plan = client.post(
                "/plans",
                json={"name": name, "service_id": service, "backend_endpoint": served.backend, "inbound_mode": inbound},
            )
            assert plan.status_code == 201, plan.text
            plan_id = plan_id or plan.json()["id"]
            exposition = client.post("/expositions", json={"plan_id": plan.json()["id"], "name": name})
            assert exposition.status_code == 201, exposition.text
        secret = {"name": "shelf-token", "kind": "bearer", "values": {"token": "t-0123456789"}}
        assert client.post("/secrets", json=secret).status_code == 201
    for name in ("shelf", "notes"):
        serving(f"{served.base}/mcp/default/{name}")
    return Shelf(service_id, plan_id)


def list_tools(page: Page, exposition: str) -> None:
    open_screen(page, "Try it")
    page.get_by_label("Exposition").select_option(label=exposition)
    page.get_by_role("button", name="List its tools").click()
    expect(page.get_by_role("status")).to_contain_text("tools at")


def screens(page: Page, served: Served, shelf: Shelf) -> Iterator[str]:
    """Every screen in turn (a service's, a new and an edited plan's, Try it with a result too), each once loaded."""
    for name in ("Import", "Plans", "Templates", "Expositions", "Discovery", "Gateways", "Secrets", "Access", "Members",
                 "Audit", "History", "Services", "Traffic"):  # fmt: skip
        open_screen(page, name)
        yield name
    for name, address in (("service", f"services?service={shelf.service_id}"), ("new plan", "plans?new="),
                          ("plan", f"plans?plan={shelf.plan_id}"),
                          ("plan history", f"history?kind=plan&object={shelf.plan_id}")):  # fmt: skip
        page.goto(f"{served.base}/console/#/{address}")
        expect(page.locator("section.screen h1")).to_be_focused()
        expect(page.locator("section.screen")).not_to_have_attribute("aria-busy", "true")
        yield name
    list_tools(page, "shelf")
    pick_tool(page, "list_books")
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("region", name="Result")).to_contain_text("list_books succeeded")
    yield "Try it"


def test_elements_meant_to_be_hidden_are_hidden(page: Page, served: Served, shelf: Shelf) -> None:
    page.goto(f"{served.base}/console/")
    expect(page.get_by_label("API token")).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_be_hidden()
    log_in(page, served)
    expect(page.get_by_role("button", name="Log out")).to_be_visible()

    open_screen(page, "Import")
    expect(page.get_by_label("Description file")).to_be_visible()
    expect(page.get_by_label("Description URL")).to_be_hidden()
    expect(page.get_by_label("Description text")).to_be_hidden()
    page.get_by_label("Source").select_option("url")
    expect(page.get_by_label("Description URL")).to_be_visible()
    expect(page.get_by_label("Description file")).to_be_hidden()

    open_screen(page, "Try it")
    page.get_by_label("Exposition").select_option(label="keyed")
    expect(page.get_by_label("The plan's API key")).to_be_visible()
    page.get_by_label("Exposition").select_option(label="shelf")
    expect(page.get_by_label("The plan's API key")).to_be_hidden()


def test_detaching_an_artifact_expositions_serve_is_confirmed_first(page: Page, served: Served, shelf: Shelf) -> None:
    log_in(page, served)
    page.goto(f"{served.base}/console/#/services?service={shelf.service_id}")
    artifacts = page.get_by_role("table", name="Artifacts")
    page.get_by_role("button", name="Detach hints").click()
    dialog = page.get_by_role("dialog", name="Detach hints?")
    expect(dialog).to_contain_text("These expositions serve hints now and stop serving it at once")
    expect(dialog.get_by_role("listitem")).to_have_count(2)  # not notes: another service's
    expect(dialog.get_by_role("list")).to_contain_text("shelf")
    expect(dialog.get_by_role("list")).to_contain_text("keyed")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    page.get_by_role("button", name="Detach hints").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(artifacts).to_contain_text("hints")
    with api(served) as client:
        assert "hints" in [a["name"] for a in client.get(f"/services/{shelf.service_id}/artifacts").json()]

    page.get_by_role("button", name="Detach hints").click()
    dialog.get_by_role("button", name="Detach hints").click()
    expect(page.get_by_role("status")).to_contain_text("Detached hints")
    expect(artifacts).not_to_contain_text("hints")


def test_no_screen_scrolls_sideways_at_a_phone_width(page: Page, served: Served, shelf: Shelf) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sideways = "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
    page.goto(f"{served.base}/console/")
    expect(page.get_by_label("API token")).to_be_visible()
    overflow = {"login": page.evaluate(sideways)}
    log_in(page, served)
    for name in screens(page, served, shelf):
        overflow[name] = page.evaluate(sideways)
    assert {name: pixels for name, pixels in overflow.items() if pixels > 0} == {}
    assert len(overflow) == 19


def test_every_column_header_has_an_accessible_name(page: Page, served: Served, shelf: Shelf) -> None:
    log_in(page, served)
    unnamed, seen_headers = {}, 0
    for name in screens(page, served, shelf):
        headers = page.locator("th:visible").count()  # a table in a closed <details> is checked once opened
        named = page.get_by_role("columnheader", name=re.compile(r"\S")).count()
        seen_headers += headers
        if named != headers:
            unnamed[name] = headers - named
    assert unnamed == {}
    assert seen_headers > 40  # the tables of every screen were there to check


def test_a_tool_error_is_announced_as_an_error(page: Page, served: Served, shelf: Shelf, seen: Seen) -> None:
    log_in(page, served)
    list_tools(page, "shelf")
    pick_tool(page, "get_book")
    page.get_by_label("bookId (required)").fill("424242")
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("alert")).to_contain_text("get_book reported an error")
    expect(page.get_by_role("status")).to_be_empty()
    expect(page.get_by_role("region", name="Result").locator(".error")).to_have_text("get_book reported an error")

    def refuse(route: Route) -> None:  # the gateway answers the call with a JSON-RPC error
        sent = json.loads(route.request.post_data or "{}")
        if sent.get("method") != "tools/call":
            route.continue_()
            return
        error = {"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32602, "message": "no tool get_book here"}}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(error))

    page.route("**/mcp/default/shelf", refuse)
    page.get_by_role("button", name="Call the tool").click()
    expect(page.get_by_role("alert")).to_contain_text("tools/call failed: no tool get_book here (code -32602)")
    expect(page.get_by_role("status")).to_be_empty()
    assert unexpected(seen.problems) == []


def test_messages_go_away_and_never_cover_a_field(page: Page, served: Served, shelf: Shelf) -> None:
    page.clock.install()
    log_in(page, served)
    page.goto(f"{served.base}/console/#/plans?plan={shelf.plan_id}")
    status = page.get_by_role("status")
    save = page.get_by_role("button", name="Save the plan")
    save.click()
    expect(status).to_have_text("Nothing changed.")
    covered = page.evaluate(  # with the button at the bottom of the window, where a bar over the page would be
        """() => {
            [...document.querySelectorAll("main button")].at(-1).scrollIntoView({ block: "end" });
            const box = document.getElementById("status").getBoundingClientRect();
            return [...document.querySelectorAll("main input, main select, main textarea, main button")]
                .map((field) => [field, field.getBoundingClientRect()])
                .filter(([, r]) => r.width && r.height && r.left < box.right && box.left < r.right
                    && r.top < box.bottom && box.top < r.bottom)
                .map(([field]) => field.name || field.textContent);
        }"""
    )
    assert covered == []

    page.get_by_role("button", name="Dismiss the message").click()
    expect(status).to_be_empty()
    expect(page.get_by_role("button", name="Dismiss the message")).to_be_hidden()
    page.get_by_label("Include", exact=True).fill("no_such_tool")
    save.click()  # far below the messages: an error is brought into view
    expect(page.get_by_role("alert")).to_contain_text("no_such_tool")
    expect(page.get_by_role("alert")).to_be_in_viewport()
    page.get_by_label("Include", exact=True).fill("")
    save.click()
    expect(page.get_by_role("alert")).to_be_empty()  # the next action
    expect(status).to_have_text("Nothing changed.")
    open_screen(page, "Services")  # the next screen
    expect(status).to_be_empty()
    page.goto(f"{served.base}/console/#/plans?plan={shelf.plan_id}")
    save.click()
    expect(status).to_have_text("Nothing changed.")
    page.clock.run_for(11_000)  # after a while
    expect(status).to_be_empty()


def test_a_tool_description_keeps_its_lines_and_a_little_markdown(page: Page, served: Served, shelf: Shelf) -> None:
    log_in(page, served)
    list_tools(page, "notes")
    described = page.locator("form .description")
    paragraphs = described.locator("p")
    expect(paragraphs).to_have_count(3)
    expect(paragraphs.first.locator("br")).to_have_count(1)
    expect(paragraphs.first).to_have_text("First linesecond line")
    expect(described.locator("code")).to_have_text("a_code")
    expect(described.locator("strong")).to_have_text("bold")
    expect(described.locator("em")).to_have_text("emphasis")
    link = described.get_by_role("link", name="the docs")
    expect(link).to_have_attribute("href", "https://example.com/docs")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    expect(described.locator("a")).to_have_count(1)  # javascript: is no link
    expect(described).to_contain_text("[this](javascript:go)")
    expect(described.locator("ul li")).to_have_text(["one", "two"])
    expect(paragraphs.last).to_have_text('<script>window.pwned=1</script><img src=x onerror="window.pwned=2">')
    assert page.evaluate("document.querySelectorAll('main img, main script').length") == 0
    assert page.evaluate("window.pwned") is None
    expect(page.get_by_label("Tool", exact=True)).to_have_attribute("aria-describedby", re.compile(r"\S"))
    # a description too long to parse is shown as it is, its lines kept
    shown = page.evaluate(
        """async () => {
            const { markdown, MAX_MARKDOWN } = await import("./markdown.js");
            const [node, ...rest] = markdown("**x**\\n".repeat(MAX_MARKDOWN));
            const holder = document.createElement("div");
            holder.className = "description";
            document.body.append(holder);
            holder.append(node);
            return [rest.length, node.className, node.textContent.length, getComputedStyle(node).whiteSpace];
        }"""
    )
    assert shown == [0, "plain", 6 * 20000, "pre-wrap"]
    # ordered lists show the numbers their text gives: loose ones go on, a later one starts where it says
    lists = page.evaluate(
        """async () => {
            const { markdown } = await import("./markdown.js");
            const text = "1. a\\n\\n2. b\\n\\n3. c\\n\\n```\\ncode\\n```\\n4. d\\n\\n404. Not found\\n409. Conflict"
                + "\\n\\n- x\\n\\n1. one\\n1. one again\\n1. and again";
            return markdown(text).filter((n) => n.tagName === "OL").map((ol) => [
                ol.start, [...ol.children].map((li) => li.getAttribute("value")),
                [...ol.children].map((li) => li.textContent)]);
        }"""
    )
    assert lists == [
        [1, [None, None, None], ["a", "b", "c"]],  # one list, counting (it was 1. 1. 1.)
        [4, ["4", "404", "409"], ["d", "Not found", "Conflict"]],  # numbers that do not count are each shown
        [1, [None, None, None], ["one", "one again", "and again"]],  # numbered alike: counting from the first
    ]


def test_try_it_fills_resource_templates_as_rfc_6570_says(page: Page, served: Served) -> None:
    """The finding: `{?q}` lost its `?q=`, other operators their prefixes, and `{a,b}` was sent with its braces."""
    log_in(page, served)
    expanded = page.evaluate(
        """async () => {
            const { expand, variables } = await import("./screens/tryit_more.js");
            const values = { q: "dune & sons", a: "x", b: "y/z", path: "a/b", long: "abcdef", none: "" };
            const templates = ["note://shelf/search{?q}", "note://shelf/pair/{a,b}", "x{/a,b}", "x{.a}", "x{#path}",
                "x{;a,none}", "x{?a}{&b}", "x/{+path}", "x/{long:3}", "x{?none}", "x/{a}"];
            return [variables("note://{a,b}{?q,long:2}"), ...templates.map((t) => expand(t, values))];
        }"""
    )
    assert expanded == [
        ["a", "b", "q", "long"],
        "note://shelf/search?q=dune%20%26%20sons",
        "note://shelf/pair/x,y%2Fz",
        "x/x/y%2Fz",
        "x.x",
        "x#a/b",
        "x;a=x",
        "x?a=x&b=y%2Fz",
        "x/a/b",
        "x/abc",
        "x",
        "x/x",
    ]


def test_lists_the_api_answers_a_page_at_a_time_are_read_whole(page: Page, served: Served) -> None:
    """The finding: screens and choices read one page of 1,000 and silently left the rest out."""
    asked: list[str] = []

    def pages(route: Route) -> None:
        asked.append(route.request.url.split("?", 1)[1])
        found = re.search(r"offset=(\d+)", route.request.url)
        offset = int(found.group(1)) if found else 0
        items = [{"id": f"t{n}"} for n in range(offset, min(offset + 1000, 2345))]
        route.fulfill(json=items, headers={"X-Total-Count": "2345"})

    log_in(page, served)
    page.route("**/api/v1/numbered*", pages)
    count = page.evaluate(
        """async () => {
            const { Api } = await import("./api.js");
            const items = await new Api(sessionStorage.getItem("apimcp.console.token")).all("/numbered");
            return [items.length, items[2344].id];
        }"""
    )
    assert count == [2345, "t2344"]
    assert asked == ["limit=1000", "limit=1000&offset=1000", "limit=1000&offset=2000"]
