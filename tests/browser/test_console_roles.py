"""The console by role, driven in Chromium: an editor is refused an admin's action in the API's words; a viewer
sees every screen but each change control is disabled and says why; an admin invites from the Members screen (the
code shown once); a person of two organizations switches between them in the header."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Seen, Served, api, issue_token, log_in, open_screen, unexpected, unlabelled

READ_ONLY = "Read only: you have the viewer role in organization default"


def test_an_editor_is_refused_an_admin_action_in_the_apis_words(served: Served, page: Page, seen: Seen) -> None:
    log_in(page, Served(served.base, issue_token(served, "editor-console", "user"), served.backend))
    expect(page.get_by_text("Organization default · editor")).to_be_visible()
    open_screen(page, "Members")
    expect(page.get_by_text("managing members needs the admin role")).to_be_visible()
    expect(page.get_by_role("button", name="Invite")).to_have_count(0)
    open_screen(page, "Access")
    expect(page.get_by_text("Read only")).to_have_count(0)  # an editor changes things
    page.get_by_label("Token name").fill("escalate")
    page.get_by_role("button", name="Create the token").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Forbidden: POST /api/v1/tokens needs the admin role in organization default")
    expect(alert).to_contain_text("this is a user token, with the editor role")
    assert unlabelled(page) == []
    assert unexpected(seen.problems, 403) == []


def test_a_viewer_sees_every_screen_but_changes_nothing(served: Served, page: Page, seen: Seen) -> None:
    log_in(page, Served(served.base, issue_token(served, "viewer-console", "viewer"), served.backend))
    expect(page.get_by_text("Organization default · viewer")).to_be_visible()
    for screen in ("Services", "Plans", "Expositions", "Gateways", "Secrets", "History"):
        open_screen(page, screen)
    open_screen(page, "Import")
    expect(page.get_by_role("note").filter(has_text=READ_ONLY)).to_be_visible()
    submit = page.locator("section.screen form:not([role=search]) button[type=submit]").first
    expect(submit).to_be_disabled()
    expect(submit).to_have_attribute("title", "Read only: changes need the editor role")
    open_screen(page, "Access")
    expect(page.get_by_role("note").filter(has_text=READ_ONLY)).to_be_visible()
    expect(page.get_by_role("button", name="Create the token")).to_be_disabled()
    expect(page.get_by_label("Token name")).to_be_disabled()
    expect(page.get_by_role("button", name="Register the key")).to_be_disabled()
    open_screen(page, "Members")
    expect(page.get_by_text("You have the viewer role")).to_be_visible()
    # what only reads, or chooses what the page shows, stays usable (the finding: every form was disabled)
    open_screen(page, "History")
    expect(page.get_by_role("button", name="Show the changes")).to_be_enabled()
    open_screen(page, "Expositions")
    expect(page.get_by_role("form", name="Which gateway").locator("button")).to_be_enabled()
    open_screen(page, "Traffic")  # reading screens have nothing to disable
    assert unlabelled(page) == []
    assert unexpected(seen.problems) == []


def test_an_admin_invites_and_a_person_switches_organization(
    served: Served, page: Page, seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APIMCP_ADMIN_TOKEN", "the-admin-token-for-the-console-test")
    with api(served, "the-admin-token-for-the-console-test") as operator:
        second = operator.post("/organizations", json={"name": "second"})
        assert second.status_code == 201, second.text
    second_admin = second.json()["token"]

    # the admin invites Pat from the Members screen: the code is shown once
    log_in(page, served)
    open_screen(page, "Members")
    page.get_by_label("E-mail address").fill("pat@example.com")
    page.get_by_label("Role", exact=True).select_option("viewer")
    page.get_by_role("button", name="Invite", exact=True).click()
    expect(page.get_by_role("heading", name="The invitation of pat@example.com")).to_be_focused()
    code = page.locator("#invite-once").inner_text()
    assert code.startswith("apimcp_invite_")
    assert unlabelled(page) == []

    with api(served, "unused") as anonymous:
        anonymous.headers.pop("Authorization")
        accepted = anonymous.post("/invitations/accept", json={"code": code})
        assert accepted.status_code == 200, accepted.text
    pat = accepted.json()["token"]
    with api(served, second_admin) as admin_of_second:
        invited = admin_of_second.post("/invitations", json={"email": "pat@example.com", "role": "editor"}).json()
    with api(served, pat) as as_pat:
        assert as_pat.post("/invitations/accept", json={"code": invited["code"]}).status_code == 200

    page.get_by_role("button", name="Log out").click()
    log_in(page, Served(served.base, pat, served.backend))
    expect(page.get_by_text("Organization default · viewer · pat@example.com")).to_be_visible()
    switcher = page.get_by_label("Your organizations")
    expect(switcher).to_be_visible()
    switcher.select_option("second")
    expect(page.get_by_text("Organization second · editor · pat@example.com")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("Now in organization second, as editor.")
    open_screen(page, "Access")
    expect(page.get_by_text("Read only")).to_have_count(0)
    page.reload()  # the choice lasts the session
    expect(page.get_by_text("Organization second · editor")).to_be_visible()
    assert unexpected(seen.problems) == []


def test_a_person_who_changes_their_own_role_gets_the_console_of_that_role(
    served: Served, page: Page, seen: Seen
) -> None:
    """The finding: the console kept the role read at sign-in, so an admin who made themselves a viewer kept an
    admin's header and controls (their clicks refused) until the page was reloaded."""
    with api(served) as admin:
        code = admin.post("/invitations", json={"email": "sam@example.com", "role": "admin"}).json()["code"]
        admin.headers.pop("Authorization")
        sam = admin.post("/invitations/accept", json={"code": code}).json()["token"]
    log_in(page, Served(served.base, sam, served.backend))
    open_screen(page, "Members")
    page.get_by_label("Role of sam@example.com").select_option("viewer")
    expect(page.get_by_role("status")).to_contain_text("sam@example.com is now viewer.")
    expect(page.get_by_text("Organization default · viewer · sam@example.com")).to_be_visible()
    expect(page.get_by_text("You have the viewer role")).to_be_visible()
    expect(page.get_by_role("button", name="Invite", exact=True)).to_have_count(0)
    assert unexpected(seen.problems) == []


def test_a_screen_name_every_object_has_shows_the_home_screen(served: Served, page: Page, seen: Seen) -> None:
    log_in(page, served)
    for name in ("constructor", "__proto__", "toString"):
        page.goto(f"{served.base}/console/#/{name}")
        expect(page.get_by_role("heading", level=1, name="Traffic")).to_be_visible()
        expect(page.get_by_role("alert")).to_be_empty()
    assert unexpected(seen.problems) == []
