"""People through the REST API: roles on every route (one table, walked here), invitations, memberships and the
tokens bound to them, acting in several organizations (on SQLite and PostgreSQL)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx2
import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from sqlalchemy import update

from apimcp.control.api import auth, roles
from apimcp.control.api.app import create_api
from apimcp.control.domain.tokens import ADMIN, EDITOR, VIEWER
from apimcp.control.models import Invitation, utcnow
from apimcp.control.plane import ControlPlane
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


def _calls(dependant: Dependant) -> set[object]:
    found: set[object] = set()
    for sub in dependant.dependencies:
        found.add(sub.call)
        found |= _calls(sub)
    return found


def _api_routes(plane: ControlPlane) -> list[tuple[str, str, APIRoute]]:
    """Every (method, path as declared, route) the application serves under /api/v1."""
    found = []
    for context in iter_route_contexts(create_api(plane).routes):
        route = context.original_route
        if isinstance(route, APIRoute) and (context.path or "").startswith("/api/v1/"):
            assert context.path == "/api/v1" + route.path
            found += [(method, route.path, route) for method in sorted(route.methods)]
    return found


def test_every_route_declares_the_role_it_requires(plane: ControlPlane) -> None:
    """No route can forget its role: each is in `roles.REQUIRED`, and depends on the check its role names."""
    checks = {VIEWER: auth.user, EDITOR: auth.user, ADMIN: auth.user, roles.GATEWAY: auth.gateway,
              roles.OPERATOR: auth.admin, roles.INVITED: auth.person, roles.SIGNING_IN: auth.signing_in}  # fmt: skip
    served = _api_routes(plane)
    assert len(served) > 60
    for method, path, route in served:
        needed = roles.REQUIRED.get((method, path))
        assert needed is not None, f"{method} /api/v1{path} declares no role in control.api.roles.REQUIRED"
        dependencies = _calls(route.dependant)
        assert checks[needed] in dependencies, f"{method} {path} needs {needed} but does not depend on its check"
        assert not (set(checks.values()) - {checks[needed]}) & dependencies, f"{method} {path} mixes checks"
        if path.startswith("/gateway/"):
            assert needed == roles.GATEWAY
        if method == "GET" and needed in (EDITOR, ADMIN):
            pytest.fail(f"GET {path}: reading needs the viewer role only")
    assert set(roles.REQUIRED) == {(m, p) for m, p, _ in served}, "the table names routes that do not exist"


def _viewer(api: Api, org: Org) -> httpx2.Client:
    return api.client(created(org.user.post("/tokens", json={"name": "reader", "kind": "viewer"}))["token"])


def test_a_viewer_reads_everything_and_changes_nothing(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    viewer = _viewer(api, acme)
    for path in ("/services", f"/services/{service['id']}", "/plans", "/expositions", "/secrets", "/tokens",
                 "/gateway-keys", "/gateways", "/gateway-groups", "/organization", "/history", "/audit", "/traffic",
                 "/members", "/invitations", "/export", "/me"):  # fmt: skip
        ok(viewer.get(path))
    assert ok(viewer.get("/me"))["role"] == "viewer"
    changes = [(m, p, needed) for (m, p), needed in roles.REQUIRED.items() if needed in (EDITOR, ADMIN)]
    assert len(changes) > 30
    for method, path, needed in changes:
        concrete = re.sub(r"\{[a-z_]+\}", "x1", path)
        body = problem(viewer.request(method, concrete, json={}), 403)
        expected = f"{method} /api/v1{path} needs the {needed} role in organization acme; this is a viewer token"
        assert body["detail"] == f"{expected}, with the viewer role", body
    assert [s["name"] for s in ok(acme.user.get("/services"))] == ["echo"]  # nothing changed


def test_an_editor_changes_but_is_refused_what_needs_an_admin(api: Api, acme: Org) -> None:
    editor = api.member(acme)
    assert ok(editor.get("/me"))["role"] == "editor"
    import_echo(editor)
    created(editor.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "t"}}))
    for method, path, body in (("PUT", "/organization/policies", {"policies": []}),
                               ("POST", "/invitations", {"email": "a@b.example", "role": "viewer"}),
                               ("POST", "/tokens", {"name": "t"})):  # fmt: skip
        refused = problem(editor.request(method, path, json=body), 403)
        assert f"{method} /api/v1{path} needs the admin role in organization acme" in refused["detail"]
        assert refused["detail"].endswith("this is a user token, with the editor role")


def _invite(org: Org, email: str, role: str) -> dict[str, Any]:
    return created(org.user.post("/invitations", json={"email": email, "role": role}))  # type: ignore[no-any-return]


def _join(api: Api, org: Org, email: str, role: str) -> tuple[dict[str, Any], httpx2.Client]:
    """A new person invited to `org` with `role`, who accepted with the code alone: the answer and their client."""
    invitation = _invite(org, email, role)
    accepted = ok(api.client().post("/invitations/accept", json={"code": invitation["code"], "display_name": "Ann"}))
    assert accepted["token"].startswith("apimcp_admin_")
    return accepted, api.client(accepted["token"])


def test_an_invitation_is_accepted_once_and_makes_the_membership(api: Api, acme: Org) -> None:
    invitation = _invite(acme, "Ann@Example.com", "editor")
    assert invitation["code"].startswith("apimcp_invite_") and invitation["email"] == "ann@example.com"
    listed = ok(acme.user.get("/invitations"))
    assert [i["email"] for i in listed] == ["ann@example.com"] and "code" not in listed[0]
    assert invitation["code"] not in acme.user.get("/invitations").text

    accepted = ok(api.client().post("/invitations/accept", json={"code": invitation["code"]}))
    assert (accepted["organization"], accepted["role"], accepted["user"]["email"]) == (
        "acme",
        "editor",
        "ann@example.com",
    )
    assert (accepted["user"]["issuer"], accepted["user"]["subject"]) == ("local", "ann@example.com")
    again = problem(api.client().post("/invitations/accept", json={"code": invitation["code"]}), 409)
    assert "a code works once" in again["detail"]
    problem(api.client().post("/invitations/accept", json={"code": "apimcp_invite_nope"}), 404)
    assert ok(acme.user.get("/invitations")) == []

    ann = api.client(accepted["token"])
    me = ok(ann.get("/me"))
    assert me["user"]["email"] == "ann@example.com" and me["role"] == "editor"
    assert me["memberships"] == [{"organization_id": acme.id, "organization": "acme", "role": "editor"}]
    members = ok(acme.user.get("/members"))
    assert [(m["user"]["email"], m["role"]) for m in members] == [("ann@example.com", "editor")]
    problem(acme.user.post("/invitations", json={"email": "ann@example.com", "role": "viewer"}), 409, "email")
    problem(acme.user.post("/invitations", json={"email": "not-an-address", "role": "viewer"}), 422, "email")
    problem(acme.user.post("/invitations", json={"email": "b@example.com", "role": "owner"}), 422, "role")


def test_an_expired_invitation_is_refused(api: Api, acme: Org) -> None:
    invitation = _invite(acme, "late@example.com", "viewer")
    with api.plane.session() as session:
        session.execute(update(Invitation).values(expires_at=utcnow() - timedelta(seconds=1)))
    refused = problem(api.client().post("/invitations/accept", json={"code": invitation["code"]}), 409)
    assert "expired" in refused["detail"]
    assert ok(acme.user.get("/members")) == []
    assert acme.user.delete(f"/invitations/{invitation['id']}").status_code == 204
    problem(api.client().post("/invitations/accept", json={"code": invitation["code"]}), 404)


def test_invitations_stay_in_their_organization(api: Api, acme: Org) -> None:
    beta = api.org("beta")
    invitation = _invite(acme, "bob@example.com", "viewer")
    problem(beta.user.delete(f"/invitations/{invitation['id']}"), 404)  # another organization's: not found
    assert ok(beta.user.get("/invitations")) == []
    # a person of beta accepts acme's invitation: a membership of acme, nothing more in beta
    _, bob = _join(api, beta, "bob@example.com", "viewer")
    accepted = ok(bob.post("/invitations/accept", json={"code": invitation["code"]}))
    assert (accepted["organization"], accepted["role"], accepted["token"]) == ("acme", "viewer", None)
    roles_of = {m["organization"]: m["role"] for m in ok(bob.get("/me"))["memberships"]}
    assert roles_of == {"acme": "viewer", "beta": "viewer"}
    # another person's invitation does not open for a signed-in person of another e-mail
    other = _invite(acme, "carol@example.com", "admin")
    refused = problem(bob.post("/invitations/accept", json={"code": other["code"]}), 403)
    assert refused["detail"] == "this invitation is for carol@example.com; you are signed in as bob@example.com"
    # a service account's token accepts nothing, and the code alone does not open a known person
    problem(acme.user.post("/invitations/accept", json={"code": other["code"]}), 403)
    mine = _invite(beta, "bob2@example.com", "viewer")
    ok(api.client().post("/invitations/accept", json={"code": mine["code"]}))
    again = _invite(acme, "bob2@example.com", "viewer")
    problem(api.client().post("/invitations/accept", json={"code": again["code"]}), 401)


def test_removing_a_member_kills_their_tokens(api: Api, acme: Org) -> None:
    accepted, ann = _join(api, acme, "ann@example.com", "admin")
    user_id = accepted["user"]["id"]
    bound = created(acme.user.post("/tokens", json={"name": "ann-ci", "kind": "user", "user_id": user_id}))
    assert bound["user_id"] == user_id and bound["service_account"] is None
    ci = api.client(bound["token"])
    assert ok(ci.get("/me"))["role"] == "editor"  # min(user token: editor, ann: admin)
    ok(acme.user.patch(f"/members/{user_id}", json={"role": "viewer"}))
    assert ok(ci.get("/me"))["role"] == "viewer" and ok(ann.get("/me"))["role"] == "viewer"
    problem(ci.post("/gateway-groups", json={"name": "g"}), 403)
    assert acme.user.delete(f"/members/{user_id}").status_code == 204
    for client in (ann, ci):
        problem(client.get("/services"), 401)
    tokens = {t["name"]: t for t in ok(acme.user.get("/tokens"))}
    assert tokens["ann-ci"]["revoked_at"] is not None
    problem(acme.user.delete(f"/members/{user_id}"), 404)
    problem(acme.user.post("/tokens", json={"name": "x", "user_id": user_id}), 422, "user_id")


def test_a_person_acts_in_each_of_their_organizations(api: Api, acme: Org) -> None:
    beta = api.org("beta")
    _, ann = _join(api, acme, "ann@example.com", "editor")
    ok(ann.post("/invitations/accept", json={"code": _invite(beta, "ann@example.com", "viewer")["code"]}))
    me = ok(ann.get("/me"))
    assert [(m["organization"], m["role"]) for m in me["memberships"]] == [("acme", "editor"), ("beta", "viewer")]
    in_beta = {"X-Organization": "beta"}
    there = ok(ann.get("/me", headers=in_beta))
    assert (there["organization"], there["role"]) == ("beta", "viewer")
    import_echo(beta.user)
    assert [s["name"] for s in ok(ann.get("/services", headers=in_beta))] == ["echo"]
    assert ok(ann.get("/services")) == []  # its own organization without the header
    refused = problem(ann.post("/gateway-groups", json={"name": "g"}, headers=in_beta), 403)
    assert refused["detail"].endswith("ann@example.com has the viewer role here")
    problem(ann.get("/services", headers={"X-Organization": "gamma"}), 403)
    problem(acme.user.get("/services", headers=in_beta), 403)  # a service account stays home
    assert ok(acme.user.get("/me"))["user"] is None and ok(acme.user.get("/me"))["service_account"] == "tester"


def test_a_token_an_admin_issues_for_a_member_acts_only_in_the_admin_s_organization(api: Api, acme: Org) -> None:
    """An admin of acme must hold no key to the other organizations its members belong to (where ann is admin)."""
    beta = api.org("beta")
    joined, ann = _join(api, acme, "ann@example.com", "viewer")
    ok(ann.post("/invitations/accept", json={"code": _invite(beta, "ann@example.com", "admin")["code"]}))
    issued = created(acme.user.post("/tokens", json={"name": "for-ann", "kind": "admin",
                                                     "user_id": joined["user"]["id"]}))  # fmt: skip
    for_ann = api.client(issued["token"])
    assert ok(for_ann.get("/me"))["role"] == "viewer"
    refused = problem(for_ann.get("/secrets", headers={"X-Organization": "beta"}), 403)
    assert "acts only there" in refused["detail"]
    assert ok(ann.get("/me", headers={"X-Organization": "beta"}))["role"] == "admin"  # her own sign-in's token


def test_the_history_names_the_person(api: Api, acme: Org) -> None:
    _, ann = _join(api, acme, "ann@example.com", "editor")
    import_echo(ann)
    items = ok(acme.user.get("/history"))["items"]
    assert (items[0]["actor"]["name"], items[0]["actor"]["role"]) == ("ann@example.com", "editor")


def test_the_last_admin_member_is_neither_demoted_nor_removed(api: Api, acme: Org) -> None:
    first, first_client = _join(api, acme, "first@example.com", "admin")
    first_id = first["user"]["id"]
    for token in ok(acme.user.get("/tokens")):  # the organization's admin service accounts go: people manage it now
        if token["kind"] == "admin" and token["service_account"] and token["revoked_at"] is None:
            ok(first_client.delete(f"/tokens/{token['id']}"))
    refused = problem(first_client.patch(f"/members/{first_id}", json={"role": "editor"}), 409)
    assert "last admin" in refused["detail"]
    problem(first_client.delete(f"/members/{first_id}"), 409)
    second = created(first_client.post("/invitations", json={"email": "second@example.com", "role": "admin"}))
    ok(api.client().post("/invitations/accept", json={"code": second["code"]}))
    assert ok(first_client.patch(f"/members/{first_id}", json={"role": "editor"}))["role"] == "editor"
