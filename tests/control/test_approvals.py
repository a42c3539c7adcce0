"""Approvals by an administrator (on SQLite and PostgreSQL): a call's request is pending until an admin decides it,
an approval serves one call, a refusal holds until it expires, each call (caller, arguments) has its own request,
an organization sees and decides only its own, and pending requests are bounded."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from apimcp.control.domain import approvals, expositions, plans
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Conflict, DomainError, Invalid, NotFound
from apimcp.control.models import ApprovalRequest, utcnow
from apimcp.control.plane import ControlPlane
from tests.control.factories import approval_call, import_echo, new_org


def _exposition(plane: ControlPlane, organization_id: str, name: str = "library") -> str:
    service_id = import_echo(plane, organization_id).service.id
    with plane.session() as session:
        plan, _ = plans.create(session, organization_id, service_id, name, {})
        return expositions.create(session, organization_id, plan.id, name=name).id


@pytest.fixture
def acme(plane: ControlPlane) -> str:
    return new_org(plane, "acme")


@pytest.fixture
def library(plane: ControlPlane, acme: str) -> str:
    return _exposition(plane, acme)


def _call(exposition: str, **changes: Any) -> dict[str, Any]:
    return approval_call(exposition, **changes)


def _submit(plane: ControlPlane, organization_id: str | None, call: dict[str, Any]) -> dict[str, Any]:
    with plane.session() as session:
        return approvals.submit(session, organization_id, call)


def _decide(plane: ControlPlane, organization_id: str, approval_id: str, approve: bool) -> dict[str, Any]:
    with plane.session() as session:
        return approvals.decide(session, organization_id, approval_id, approve, "admin@acme.example")


def _listed(plane: ControlPlane, organization_id: str, status: str | None = "pending") -> list[dict[str, Any]]:
    with plane.session() as session:
        return approvals.listed(session, organization_id, status)


def _refused(plane: ControlPlane, error: type[DomainError], call: Any, *args: Any) -> DomainError:
    with pytest.raises(error) as caught, plane.session() as session:
        call(session, *args)
    return caught.value


def _age(plane: ControlPlane, approval_id: str, seconds: float) -> None:
    """Move the request's expiry `seconds` into the past (as if that much time had gone by since it expired)."""
    with plane.session() as session:
        session.execute(
            update(ApprovalRequest)
            .where(ApprovalRequest.id == approval_id)
            .values(expires_at=utcnow() - timedelta(seconds=seconds))
        )


def test_a_call_is_pending_and_asking_again_answers_the_same_request(
    plane: ControlPlane, acme: str, library: str
) -> None:
    first = _submit(plane, acme, _call(library))
    assert first["status"] == "pending" and first["expires_in"] == 300.0
    again = _submit(plane, acme, _call(library, question="asked again", lifetime=60))
    assert again["id"] == first["id"] and again["status"] == "pending"
    assert 60 < again["expires_in"] <= 300  # the request's own lifetime, not the new one
    (listed,) = _listed(plane, acme)
    assert listed["id"] == first["id"]
    assert (listed["exposition"], listed["exposition_name"], listed["tool"]) == (library, "library", "delete_book")
    assert listed["question"] == "Approve delete_book with bookId=3?"
    assert (listed["status"], listed["expired"], listed["decided_by"], listed["decided_at"]) == (
        "pending", False, None, None,
    )  # fmt: skip
    assert listed["created_at"] < listed["expires_at"] and listed["expires_at"].endswith("+00:00")


def test_an_approval_serves_exactly_one_call(plane: ControlPlane, acme: str, library: str) -> None:
    pending = _submit(plane, acme, _call(library))
    decided = _decide(plane, acme, pending["id"], True)
    assert (decided["status"], decided["decided_by"]) == ("approved", "admin@acme.example")
    assert decided["decided_at"] is not None
    approved = _submit(plane, acme, _call(library))
    assert (approved["id"], approved["status"]) == (pending["id"], "approved")
    assert 0 < approved["expires_in"] <= 300
    assert _listed(plane, acme, "used")[0]["id"] == pending["id"]
    anew = _submit(plane, acme, _call(library))  # the same call again: a new request
    assert anew["status"] == "pending" and anew["id"] != pending["id"]
    assert [r["id"] for r in _listed(plane, acme)] == [anew["id"]]


def test_a_refusal_holds_until_the_request_expires(plane: ControlPlane, acme: str, library: str) -> None:
    pending = _submit(plane, acme, _call(library))
    assert _decide(plane, acme, pending["id"], False)["status"] == "refused"
    for _ in range(2):
        refused = _submit(plane, acme, _call(library))
        assert (refused["id"], refused["status"]) == (pending["id"], "refused")
    _age(plane, pending["id"], 1)
    anew = _submit(plane, acme, _call(library))
    assert anew["status"] == "pending" and anew["id"] != pending["id"]


def test_an_expired_request_is_replaced_and_cannot_be_decided(plane: ControlPlane, acme: str, library: str) -> None:
    pending = _submit(plane, acme, _call(library, lifetime=1))
    _age(plane, pending["id"], 0.001)
    assert _listed(plane, acme) == []  # pending lists only the live ones
    assert [r["expired"] for r in _listed(plane, acme, None)] == [True]
    refused = _refused(plane, Conflict, approvals.decide, acme, pending["id"], True, "admin@acme.example")
    assert refused.detail == (
        f"approval request {pending['id']!r} has expired: the caller makes the call again to ask anew"
    )
    anew = _submit(plane, acme, _call(library, lifetime=1))
    assert anew == {"id": anew["id"], "status": "pending", "expires_in": 1.0} and anew["id"] != pending["id"]


def test_an_approval_that_expired_before_its_call_came_back_serves_none(
    plane: ControlPlane, acme: str, library: str
) -> None:
    pending = _submit(plane, acme, _call(library))
    _decide(plane, acme, pending["id"], True)
    _age(plane, pending["id"], 1)
    assert _submit(plane, acme, _call(library))["status"] == "pending"


def test_each_caller_and_each_set_of_arguments_has_its_own_request(
    plane: ControlPlane, acme: str, library: str
) -> None:
    ann = _submit(plane, acme, _call(library))
    bob = _submit(plane, acme, _call(library, caller="https://login.example.com bob"))
    other_arguments = _submit(plane, acme, _call(library, digest="b" * 64))
    other_tool = _submit(plane, acme, _call(library, tool="add_book"))
    assert len({ann["id"], bob["id"], other_arguments["id"], other_tool["id"]}) == 4
    _decide(plane, acme, ann["id"], True)
    assert _submit(plane, acme, _call(library, caller="https://login.example.com bob"))["status"] == "pending"
    assert _submit(plane, acme, _call(library, digest="b" * 64))["status"] == "pending"
    assert _submit(plane, acme, _call(library))["status"] == "approved"


def test_another_organization_neither_submits_sees_nor_decides(plane: ControlPlane, acme: str, library: str) -> None:
    other = new_org(plane, "other")
    theirs = _exposition(plane, other, "theirs")
    refused = _refused(plane, NotFound, approvals.submit, other, _call(library))
    assert (refused.detail, refused.field) == (f"no exposition {library!r}", "exposition")
    pending = _submit(plane, acme, _call(library))
    assert _listed(plane, other, None) == []
    _refused(plane, NotFound, approvals.decide, other, pending["id"], True, "mallory@other.example")
    assert _listed(plane, acme)[0]["status"] == "pending"
    # the embedded gateway serves every organization: the exposition's own is used
    embedded = _submit(plane, None, _call(theirs))
    assert [r["id"] for r in _listed(plane, other)] == [embedded["id"]]
    _refused(plane, NotFound, approvals.submit, None, _call("0000000000000"))


def test_only_a_pending_request_is_decided(plane: ControlPlane, acme: str, library: str) -> None:
    pending = _submit(plane, acme, _call(library))
    _decide(plane, acme, pending["id"], False)
    refused = _refused(plane, Conflict, approvals.decide, acme, pending["id"], True, "x")
    assert refused.detail == f"approval request {pending['id']!r} is refused already: only a pending one is decided"
    second = _submit(plane, acme, _call(library, digest="c" * 64))
    _decide(plane, acme, second["id"], True)
    _submit(plane, acme, _call(library, digest="c" * 64))
    used = _refused(plane, Conflict, approvals.decide, acme, second["id"], False, "x")
    assert "is used already" in used.detail
    unknown = _refused(plane, NotFound, approvals.decide, acme, "nope", True, "x")
    assert unknown.detail == "no approval request 'nope'"


def test_pending_requests_are_bounded_per_organization(
    plane: ControlPlane, acme: str, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert approvals.MAX_PENDING == 1000
    monkeypatch.setattr(approvals, "MAX_PENDING", 3)
    made = [_submit(plane, acme, _call(library, digest=str(n))) for n in range(3)]
    refused = _refused(plane, approvals.TooManyPending, approvals.submit, acme, _call(library, digest="3"))
    assert refused.status == 429
    assert refused.detail.startswith("the organization has 3 approval requests pending, the most it may have")
    assert _submit(plane, acme, _call(library, digest="0"))["id"] == made[0]["id"]  # asking again is no new one
    other = new_org(plane, "other")
    assert _submit(plane, other, _call(_exposition(plane, other, "theirs")))["status"] == "pending"
    _decide(plane, acme, made[0]["id"], False)  # a decided request waits no more
    _submit(plane, acme, _call(library, digest="3"))
    _age(plane, made[1]["id"], 1)  # nor does an expired one
    _submit(plane, acme, _call(library, digest="4"))
    _refused(plane, approvals.TooManyPending, approvals.submit, acme, _call(library, digest="5"))


def test_one_caller_fills_only_its_own_share_of_the_pending_bound(
    plane: ControlPlane, acme: str, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert approvals.MAX_PENDING_PER_CALLER == 100
    monkeypatch.setattr(approvals, "MAX_PENDING_PER_CALLER", 2)
    monkeypatch.setattr(approvals, "MAX_PENDING", 3)
    for n in range(2):
        _submit(plane, acme, _call(library, caller="loop", digest=f"d{n}"))
    refused = _refused(
        plane, approvals.TooManyPending, approvals.submit, acme, _call(library, caller="loop", digest="d2")
    )
    assert refused.detail.startswith("the caller has 2 approval requests pending, the most one caller may have")
    assert _submit(plane, acme, _call(library, caller="someone else", digest="d2"))["status"] == "pending"
    refused = _refused(
        plane, approvals.TooManyPending, approvals.submit, acme, _call(library, caller="third", digest="d3")
    )
    assert refused.detail.startswith("the organization has 3 approval requests pending")


def test_requests_expired_for_a_day_are_deleted_as_new_ones_come(plane: ControlPlane, acme: str, library: str) -> None:
    old, recent = (_submit(plane, acme, _call(library, digest=d)) for d in ("old", "recent"))
    _age(plane, old["id"], 86_401)
    _age(plane, recent["id"], 86_000)
    _submit(plane, acme, _call(library, digest="new"))
    with plane.session() as session:
        kept = set(session.scalars(select(ApprovalRequest.digest)))
    assert kept == {"recent", "new"}


def test_a_deleted_exposition_takes_its_requests_along(plane: ControlPlane, acme: str, library: str) -> None:
    _submit(plane, acme, _call(library))
    with plane.session() as session:
        expositions.delete(session, acme, library)
    with plane.session() as session:
        assert session.scalar(select(func.count()).select_from(ApprovalRequest)) == 0


def test_listing_by_status_newest_first(plane: ControlPlane, acme: str, library: str) -> None:
    first, second, third = (_submit(plane, acme, _call(library, digest=d)) for d in "123")
    _decide(plane, acme, first["id"], True)
    _decide(plane, acme, second["id"], False)
    assert [r["id"] for r in _listed(plane, acme)] == [third["id"]]
    assert [r["id"] for r in _listed(plane, acme, "approved")] == [first["id"]]
    assert [r["id"] for r in _listed(plane, acme, "refused")] == [second["id"]]
    assert [r["id"] for r in _listed(plane, acme, None)] == [third["id"], second["id"], first["id"]]
    refused = _refused(plane, Invalid, approvals.listed, acme, "maybe")
    assert refused.field == "status"


@pytest.mark.parametrize(
    ("changes", "field", "detail"),
    [
        ({"tool": None}, "tool", "tool is required: a string of at most 200 characters"),
        ({"tool": ""}, "tool", "tool is empty"),
        ({"exposition": 7}, "exposition", "exposition is required: a string of at most 64 characters"),
        ({"digest": "d" * 65}, "digest", "digest has 65 characters; at most 64 are allowed"),
        ({"caller": "c" * 513}, "caller", "caller has 513 characters; at most 512 are allowed"),
        ({"question": "q" * 5001}, "question", "question has 5001 characters; at most 5000 are allowed"),
        ({"question": "Approve t with a=1?\x00"}, "question", "question holds a NUL character"),
        ({"caller": "iss|a\x00b"}, "caller", "caller holds a NUL character"),
        ({"lifetime": "60"}, "lifetime", "lifetime is required: seconds, from 1 to 3600"),
        ({"lifetime": True}, "lifetime", "lifetime is required: seconds, from 1 to 3600"),
        ({"lifetime": float("nan")}, "lifetime", "lifetime is required: seconds, from 1 to 3600"),
        ({"lifetime": 0.5}, "lifetime", "lifetime is 0.5 s; it is from 1 to 3600"),
        ({"lifetime": 3601}, "lifetime", "lifetime is 3601 s; it is from 1 to 3600"),
    ],
)
def test_a_bad_call_is_refused_naming_its_field(
    plane: ControlPlane, acme: str, library: str, changes: dict[str, Any], field: str, detail: str
) -> None:
    call = {key: value for key, value in {**_call(library), **changes}.items() if value is not None}
    refused = _refused(plane, Invalid, approvals.submit, acme, call)
    assert (refused.field, refused.detail) == (field, detail)
    assert _listed(plane, acme, None) == []


def test_two_gateways_asking_at_once_get_one_call_through(
    plane: ControlPlane, acme: str, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending = _submit(plane, acme, _call(library))
    _decide(plane, acme, pending["id"], True)
    newest = approvals._newest_live
    answers: list[dict[str, Any]] = []

    def racing(session: Any, owner: str, call: approvals.Call, now: Any) -> ApprovalRequest | None:
        found = newest(session, owner, call, now)  # read as approved, then the other gateway uses it first
        monkeypatch.setattr(approvals, "_newest_live", newest)
        answers.append(_submit(plane, acme, _call(library)))
        return found

    monkeypatch.setattr(approvals, "_newest_live", racing)
    late = _submit(plane, acme, _call(library))
    assert answers[0]["status"] == "approved"
    assert late["status"] == "pending" and late["id"] != pending["id"]


def test_two_admins_deciding_at_once_one_is_told(
    plane: ControlPlane, acme: str, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pending = _submit(plane, acme, _call(library))

    def racing(session: Any, *args: Any) -> Any:
        found = get_owned(session, *args)  # read as pending, then the other admin refuses it first
        monkeypatch.setattr(approvals, "get_owned", get_owned)
        _decide(plane, acme, pending["id"], False)
        return found

    monkeypatch.setattr(approvals, "get_owned", racing)
    refused = _refused(plane, Conflict, approvals.decide, acme, pending["id"], True, "late@acme.example")
    assert refused.detail == f"approval request {pending['id']!r} was decided meanwhile by someone else"
    assert _listed(plane, acme, "refused")[0]["decided_by"] == "admin@acme.example"


def test_a_late_approval_leaves_the_caller_the_whole_lifetime_to_use_it(
    plane: ControlPlane, acme: str, library: str
) -> None:
    pending = _submit(plane, acme, _call(library, lifetime=300))
    with plane.session() as session:  # decided 290 s after it was asked, 10 s before it would have expired
        session.execute(
            update(ApprovalRequest)
            .where(ApprovalRequest.id == pending["id"])
            .values(created_at=utcnow() - timedelta(seconds=290), expires_at=utcnow() + timedelta(seconds=10))
        )
    decided = _decide(plane, acme, pending["id"], True)
    assert decided["expired"] is False
    approved = _submit(plane, acme, _call(library, lifetime=300))
    assert approved["status"] == "approved" and 290 < approved["expires_in"] <= 300


def test_of_two_requests_made_for_one_call_at_once_the_decided_one_counts(
    plane: ControlPlane, acme: str, library: str
) -> None:
    call = approvals.checked(_call(library))
    with plane.session() as session:  # what two gateways asking at the same moment can leave: two requests
        older = approvals._new_request(session, acme, call, utcnow() - timedelta(seconds=1))["id"]
        newer = approvals._new_request(session, acme, call, utcnow())["id"]
    assert _submit(plane, acme, _call(library))["id"] == newer
    _decide(plane, acme, older, True)  # the admin happened to decide the older one
    approved = _submit(plane, acme, _call(library))
    assert (approved["id"], approved["status"]) == (older, "approved")
    assert _submit(plane, acme, _call(library))["id"] == newer  # used: the other one waits on
    _decide(plane, acme, newer, False)
    assert _submit(plane, acme, _call(library))["status"] == "refused"


def test_calls_arriving_together_never_exceed_the_pending_bound(
    plane: ControlPlane, acme: str, library: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(approvals, "MAX_PENDING", 3)
    start = threading.Barrier(12)
    answers: list[str] = []

    def submit(n: int) -> None:
        start.wait()
        try:
            answers.append(_submit(plane, acme, _call(library, digest=f"d{n}"))["status"])
        except approvals.TooManyPending:
            answers.append("too many")

    threads = [threading.Thread(target=submit, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(answers) == ["pending"] * 3 + ["too many"] * 9
    assert len(_listed(plane, acme)) == 3
