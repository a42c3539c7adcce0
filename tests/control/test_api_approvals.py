"""Approvals by an administrator through the REST API (on SQLite and PostgreSQL): a gateway token submits a call,
any role lists the requests, only an admin approves or refuses them (a person's decision names them), another
organization's gateway or admin neither submits nor decides, and bad input is a 4xx problem naming its field."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from apimcp.control.domain import approvals
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem
from tests.control.factories import approval_call


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


def _exposition(org: Org, name: str = "library") -> str:
    service = import_echo(org.user)
    plan = created(org.user.post("/plans", json={"service_id": service["id"], "name": name}))
    exposition: str = created(org.user.post("/expositions", json={"plan_id": plan["id"], "name": name}))["id"]
    return exposition


def _call(exposition: str, **changes: Any) -> dict[str, Any]:
    return approval_call(exposition, lifetime=120, **changes)


def _submit(org: Org, call: dict[str, Any]) -> Any:
    return ok(org.gateway.post("/gateway/approvals", json=call))


def _viewer(api: Api, org: Org) -> httpx2.Client:
    return api.client(created(org.user.post("/tokens", json={"name": "reader", "kind": "viewer"}))["token"])


def test_a_gateway_submits_a_viewer_lists_and_an_admin_approves(api: Api, acme: Org) -> None:
    library = _exposition(acme)
    pending = _submit(acme, _call(library))
    assert pending == {"id": pending["id"], "status": "pending", "expires_in": 120.0}
    assert _submit(acme, _call(library))["id"] == pending["id"]

    viewer, editor = _viewer(api, acme), api.member(acme)
    (listed,) = ok(viewer.get("/approvals"))
    assert (listed["id"], listed["exposition"], listed["exposition_name"]) == (pending["id"], library, "library")
    assert (listed["tool"], listed["caller"], listed["status"]) == (
        "delete_book", "https://login.example.com ann", "pending",
    )  # fmt: skip
    assert listed["question"] == "Approve delete_book with bookId=3?"
    searched = viewer.get("/approvals", params={"q": "bookId=3 ann"})
    assert [a["id"] for a in ok(searched)] == [pending["id"]] and searched.headers["X-Total-Count"] == "1"
    assert ok(viewer.get("/approvals", params={"q": "bob"})) == []
    for client, kind in (
        (viewer, "a viewer token, with the viewer role"),
        (editor, "a user token, with the editor role"),
    ):
        for verb in ("approve", "refuse"):
            refused = problem(client.post(f"/approvals/{pending['id']}/{verb}"), 403)
            route = f"POST /api/v1/approvals/{{approval_id}}/{verb}"
            assert refused["detail"] == f"{route} needs the admin role in organization acme; this is {kind}"

    approved = ok(acme.user.post(f"/approvals/{pending['id']}/approve"))
    assert approved["status"] == "approved" and approved["decided_by"].startswith("token ")
    assert approved["decided_at"] is not None
    assert _submit(acme, _call(library))["status"] == "approved"
    anew = _submit(acme, _call(library))
    assert anew["status"] == "pending" and anew["id"] != pending["id"]
    assert [a["status"] for a in ok(viewer.get("/approvals", params={"status": "all"}))] == ["pending", "used"]
    assert [a["id"] for a in ok(viewer.get("/approvals", params={"status": "used"}))] == [pending["id"]]


def test_a_person_refuses_and_the_decision_names_them(api: Api, acme: Org) -> None:
    library = _exposition(acme)
    pending = _submit(acme, _call(library))
    invitation = created(acme.user.post("/invitations", json={"email": "ann@acme.example", "role": "admin"}))
    accepted = ok(api.client().post("/invitations/accept", json={"code": invitation["code"]}))
    ann = api.client(accepted["token"])
    refused = ok(ann.post(f"/approvals/{pending['id']}/refuse"))
    assert (refused["status"], refused["decided_by"]) == ("refused", "ann@acme.example")
    assert _submit(acme, _call(library))["status"] == "refused"
    again = problem(ann.post(f"/approvals/{pending['id']}/approve"), 409)
    assert again["detail"] == f"approval request {pending['id']!r} is refused already: only a pending one is decided"
    assert ok(acme.user.get("/approvals")) == []
    assert [a["decided_by"] for a in ok(acme.user.get("/approvals", params={"status": "refused"}))] == [
        "ann@acme.example"
    ]


def test_another_organization_neither_submits_sees_nor_decides(api: Api, acme: Org) -> None:
    other = api.org("other")
    library = _exposition(acme)
    refused = problem(other.gateway.post("/gateway/approvals", json=_call(library)), 404, "exposition")
    assert refused["detail"] == f"no exposition {library!r}"
    pending = _submit(acme, _call(library))
    assert ok(other.user.get("/approvals", params={"status": "all"})) == []
    problem(other.user.post(f"/approvals/{pending['id']}/approve"), 404)
    assert ok(acme.user.get("/approvals"))[0]["status"] == "pending"


def test_only_a_gateway_token_submits(api: Api, acme: Org) -> None:
    library = _exposition(acme)
    refused = problem(acme.user.post("/gateway/approvals", json=_call(library)), 401)
    assert refused["detail"] == "an admin token cannot be used here"
    problem(acme.gateway.get("/approvals"), 401)
    assert ok(acme.user.get("/approvals", params={"status": "all"})) == []


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"tool": None}, "tool"),
        ({"tool": ""}, "tool"),
        ({"exposition": 7}, "exposition"),
        ({"digest": "d" * 65}, "digest"),
        ({"caller": "c" * 513}, "caller"),
        ({"question": "q" * 5001}, "question"),
        ({"question": "Approve t?\x00"}, "question"),
        ({"caller": "iss|a\x00b"}, "caller"),
        ({"lifetime": "60"}, "lifetime"),
        ({"lifetime": True}, "lifetime"),
        ({"lifetime": 0}, "lifetime"),
        ({"lifetime": 3601}, "lifetime"),
        ({"arguments": {"bookId": 3}}, "arguments"),
    ],
)
def test_a_bad_submission_is_a_422_naming_its_field(acme: Org, changes: dict[str, Any], field: str) -> None:
    call = {key: value for key, value in {**_call("x"), **changes}.items() if value is not None}
    problem(acme.gateway.post("/gateway/approvals", json=call), 422, field)


def test_listing_and_deciding_refuse_what_is_not_there(acme: Org) -> None:
    problem(acme.user.get("/approvals", params={"status": "maybe"}), 422, "status")
    body = problem(acme.user.post("/approvals/nope/approve"), 404)
    assert body["detail"] == "no approval request 'nope'"


def test_a_flood_of_requests_is_refused_with_429(acme: Org, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(approvals, "MAX_PENDING", 2)
    library = _exposition(acme)
    for digest in ("1", "2"):
        _submit(acme, _call(library, digest=digest))
    refused = problem(acme.gateway.post("/gateway/approvals", json=_call(library, digest="3")), 429)
    assert refused["title"] == "Too many pending approvals"
    assert "2 approval requests pending, the most it may have" in refused["detail"]
    assert _submit(acme, _call(library, digest="1"))["status"] == "pending"  # asking again still answers
