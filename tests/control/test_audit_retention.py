"""The control plane keeps an organization's refusals apart from its other audit events: however many refusals a
gateway reports (or whoever holds its token), the events of answered requests stay; listed newest first across
both, filtered by exposition and kind; a summary's count kept and listed."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.control.domain import audit
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem

KEEP = 30


def _expose(org: Org, name: str) -> str:
    service = import_echo(org.user, name=f"{name}-api")
    plan = created(org.user.post("/plans", json={"name": name, "service_id": service["id"], "audit": True}))
    return str(created(org.user.post("/expositions", json={"plan_id": plan["id"], "name": name}))["id"])


def _answered(exposition_id: str, tool: str, moment: float) -> dict[str, Any]:
    return {"time": moment, "action": "tools/call", "target": tool, "outcome": "success",
            "exposition_id": exposition_id, "exposition": "library", "user": "alice"}  # fmt: skip


def _refused(exposition_id: str, moment: float, count: int | None = None) -> dict[str, Any]:
    event = {"time": moment, "action": "authentication", "target": "/mcp/default/library", "outcome": "failure",
             "reason": "invalid_api_key", "status": 401, "exposition_id": exposition_id,
             "client": "203.0.113.9"}  # fmt: skip
    if count is not None:
        event |= {"count": count, "first_time": moment - 59, "last_time": moment}
    return event


def _report(org: Org, events: list[dict[str, Any]]) -> dict[str, Any]:
    answer = org.gateway.post("/gateway/audit", json={"events": events})
    assert answer.status_code == 202, answer.text
    return dict(answer.json())


def _listed(org: Org, **query: str) -> list[dict[str, Any]]:
    return list(ok(org.user.get("/audit", params={"limit": "1000", **query})))


def test_refusals_never_push_the_events_of_answered_requests_out_of_the_trail(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding M4 (issue 21): one retention for every event, so a flood of refusals evicted who called which tool.
    Here with KEEP events of each kind instead of 10,000, and twenty times as many refusals arriving."""
    monkeypatch.setattr(audit, "KEEP", KEEP)
    monkeypatch.setattr(audit, "KEEP_REFUSALS", KEEP)
    acme = api.org("acme")
    library = _expose(acme, "library")
    assert _report(acme, [_answered(library, f"tool_{n}", 1000 + n) for n in range(KEEP + 10)]) == {
        "kept": KEEP + 10,
        "dropped": 0,
    }
    moment = 2000.0
    for _ in range(20):  # a gateway's batches: KEEP refusals each, the last of them a summary
        batch = [_refused(library, moment + n) for n in range(KEEP - 1)] + [_refused(library, moment + KEEP, 137)]
        assert _report(acme, batch)["kept"] == KEEP
        moment += 100

    listed = _listed(acme)
    assert len(listed) == 2 * KEEP  # the newest KEEP of each
    assert [e["action"] for e in listed] == ["authentication"] * KEEP + ["tools/call"] * KEEP  # newest first
    assert [e["target"] for e in listed[KEEP:]] == [f"tool_{n}" for n in reversed(range(10, KEEP + 10))]
    assert listed[0]["count"] == 137 and listed[0]["first_time"] == listed[0]["time"] - 59
    assert sum(e.get("count", 1) for e in listed[:KEEP]) == KEEP - 1 + 137

    answered = _listed(acme, refused="false")
    assert answered == listed[KEEP:]
    assert _listed(acme, refused="true") == listed[:KEEP]
    assert _listed(acme, refused="true", limit="3") == listed[:3]


def test_filters_by_exposition_hold_for_both_kinds(api: Api) -> None:
    acme = api.org("acme")
    library, shop = _expose(acme, "library"), _expose(acme, "shop")
    events = [_answered(library, "list_books", 101.0), _refused(shop, 102.0), _answered(shop, "buy", 103.0),
              _refused(library, 104.0, count=12)]  # fmt: skip
    assert _report(acme, events) == {"kept": 4, "dropped": 0}
    of_shop = _listed(acme, exposition="shop")
    assert [(e["action"], e.get("count")) for e in of_shop] == [("tools/call", None), ("authentication", None)]
    refused_in_library = _listed(acme, exposition="library", refused="true")
    assert [(e["action"], e["count"]) for e in refused_in_library] == [("authentication", 12)]


def test_a_summary_that_does_not_add_up_is_dropped(api: Api) -> None:
    acme = api.org("acme")
    library = _expose(acme, "library")
    answered_with_count = {**_answered(library, "list_books", 100.0), "count": 5}  # counts are for refusals only
    events = [_refused(library, 100.0, count=0), answered_with_count, _refused(library, 100.0, count=2)]
    reported = _report(acme, events)
    assert reported == {"kept": 1, "dropped": 2}
    assert [e["count"] for e in _listed(acme)] == [2]


def test_an_event_json_cannot_hold_is_dropped_and_the_rest_kept(api: Api) -> None:
    """The finding: an event nested 300 deep, or holding an integer past 64 bits, failed the whole batch with a
    500, which a gateway sends again for ever."""
    acme = api.org("acme")
    library = _expose(acme, "library")
    deep: object = 1
    for _ in range(300):
        deep = [deep]
    events = [_answered(library, "list_books", 100.0), {**_answered(library, "get_book", 101.0), "extra": deep},
              {**_answered(library, "get_book", 102.0), "extra": 2**70}]  # fmt: skip
    assert _report(acme, events) == {"kept": 1, "dropped": 2}
    assert [e["target"] for e in _listed(acme)] == ["list_books"]


def test_a_batch_sent_again_with_its_id_is_kept_once(api: Api) -> None:
    acme = api.org("acme-audit-resent")
    library = _expose(acme, "library")
    body = {"events": [_answered(library, "get_book", 1_000.0)], "report": "a" * 24}
    for kept in (1, 0):
        answer = acme.gateway.post("/gateway/audit", json=body)
        assert answer.status_code == 202 and answer.json()["kept"] == kept
    assert len(_listed(acme)) == 1


def _decided(exposition_id: str, action: str, moment: float) -> dict[str, Any]:
    event = {"time": moment, "action": action, "target": "delete_book", "outcome": "approved",
             "exposition_id": exposition_id, "exposition": "library", "user": "alice"}  # fmt: skip
    return event if action == "approval" else {**event, "outcome": "blocked", "guardrail": "secrets"}


def test_pings_listings_and_calls_never_push_approvals_or_guardrail_findings_out(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: answered requests shared one retention, so 10,000 anonymous pings on an open exposition
    pushed out an organization's approvals, guardrail findings and tool calls."""
    for name in ("KEEP", "KEEP_REFUSALS", "KEEP_ROUTINE", "KEEP_DECIDED"):
        monkeypatch.setattr(audit, name, KEEP)
    acme = api.org("acme-trails")
    library = _expose(acme, "library")
    _report(acme, [_decided(library, "approval", 1000.0), _decided(library, "guardrail", 1001.0),
                   _answered(library, "delete_book", 1002.0)])  # fmt: skip
    pings = [{**_answered(library, "", 2000.0 + n), "action": action, "target": None}
             for n, action in enumerate(["ping", "tools/list"] * KEEP)]  # fmt: skip
    _report(acme, pings)
    assert [e["action"] for e in _listed(acme, trail="decided")] == ["guardrail", "approval"]
    assert [e["target"] for e in _listed(acme, trail="answered")] == ["delete_book"]
    assert len(_listed(acme, trail="routine")) == KEEP
    _report(acme, [_answered(library, f"get_book_{n}", 3000.0 + n) for n in range(KEEP + 5)])  # calls flood
    assert [e["action"] for e in _listed(acme, trail="decided")] == ["guardrail", "approval"]
    assert "delete_book" not in {e["target"] for e in _listed(acme, trail="answered")}  # its own trail's oldest went
    assert len(_listed(acme, trail="answered")) == KEEP
    problem(acme.user.get("/audit", params={"trail": "everything"}), 422, "trail")


def test_a_signed_in_caller_s_policy_denials_are_kept_with_the_decisions_not_the_refusals(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: policy denials lived in the refusals' trail, which refusals from many client addresses (anyone
    may make them) could flush: who a rule kept from what was lost. An anonymous caller's denial stays a refusal."""
    for name in ("KEEP", "KEEP_REFUSALS", "KEEP_ROUTINE", "KEEP_DECIDED"):
        monkeypatch.setattr(audit, name, KEEP)
    acme = api.org("acme-denials")
    library = _expose(acme, "library")
    denied = {"time": 1000.0, "action": "policy", "target": "delete_book", "outcome": "denied", "status": 403,
              "reason": "policy:no-deletes", "rule": "no-deletes", "exposition_id": library,
              "user": "alice"}  # fmt: skip
    anonymous = {**denied, "time": 1001.0, "user": None, "client": "203.0.113.7"}
    _report(acme, [denied, anonymous])
    _report(acme, [_refused(library, 2000.0 + n) for n in range(KEEP + 5)])  # a flood of refusals
    assert [(e["action"], e["user"]) for e in _listed(acme, trail="decided")] == [("policy", "alice")]
    assert all(e["action"] == "authentication" for e in _listed(acme, trail="refused"))  # the anonymous one went
    assert [e["user"] for e in _listed(acme, refused="true") if e["action"] == "policy"] == ["alice"]
