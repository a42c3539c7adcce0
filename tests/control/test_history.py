"""History through the REST API: a version per change with who made it, diffs, rollbacks through the update path,
pagination, and never a secret's value (on SQLite and PostgreSQL)."""

from __future__ import annotations

import secrets as random
from typing import Any

import orjson
import pytest
from sqlalchemy import select

from apimcp.control.domain import history
from apimcp.control.models import Version
from tests.control.api_harness import ECHO_API, Api, Org, created, import_echo, ok, problem
from tests.control.factories import prompts


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


def _plan(org: Org, service_id: str, name: str = "main", **values: Any) -> dict[str, Any]:
    body = {"service_id": service_id, "name": name, "backend_endpoint": "http://echo.test/v1", **values}
    return created(org.user.post("/plans", json=body))  # type: ignore[no-any-return]


def test_plan_changes_are_versions_with_their_author_and_a_diff(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"], include=["get_item"])
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"include": ["get_item", "delete_item"], "audit": True}))
    member = api.member(acme, "alice")
    ok(member.patch(f"/plans/{plan['id']}", json={"backend_timeout_ms": 5000}))

    page = ok(acme.user.get(f"/plans/{plan['id']}/versions"))
    assert page["total"] == 3
    assert [v["number"] for v in page["items"]] == [3, 2, 1]  # newest first
    assert [v["action"] for v in page["items"]] == ["updated", "updated", "created"]
    assert page["items"][0]["actor"]["name"] == "alice" and page["items"][0]["actor"]["role"] == "user"
    assert page["items"][2]["actor"]["name"] == "tester" and page["items"][2]["actor"]["role"] == "admin"
    assert page["items"][2]["object_name"] == "main"

    first = ok(acme.user.get(f"/plans/{plan['id']}/versions/1"))
    assert first["state"]["include"] == ["get_item"] and first["state"]["backend_timeout_ms"] == 30_000

    changes = ok(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": 3}))
    assert changes["from"] == 1 and changes["to"] == 3
    assert changes["changes"] == [
        {"path": "audit", "before": False, "after": True},
        {"path": "backend_timeout_ms", "before": 30_000, "after": 5000},
        {"path": "include", "before": ["get_item"], "after": ["get_item", "delete_item"]},
    ]
    backwards = ok(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 3, "to": 2}))
    assert backwards["changes"] == [{"path": "backend_timeout_ms", "before": 5000, "after": 30_000}]
    problem(acme.user.get(f"/plans/{plan['id']}/versions/9"), 404)
    problem(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": 9}), 404)
    huge = str(2**70)  # more than the store's integers hold: refused as input, not a server error
    problem(acme.user.get(f"/plans/{plan['id']}/versions/{huge}"), 422, "number")
    problem(acme.user.post(f"/plans/{plan['id']}/versions/{huge}/restore"), 422, "number")
    problem(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": huge}), 422, "to")

    same = ok(acme.user.patch(f"/plans/{plan['id']}", json={"backend_timeout_ms": 5000}))  # changes nothing
    assert same["backend_timeout_ms"] == 5000
    assert ok(acme.user.get(f"/plans/{plan['id']}/versions"))["total"] == 3


def test_deletions_are_versions_and_the_history_outlives_the_object(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"])
    expo = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    ok(acme.user.patch(f"/expositions/{expo['id']}", json={"name": "store"}))
    assert acme.user.delete(f"/plans/{plan['id']}").status_code == 204  # its exposition goes with it

    expo_versions = ok(acme.user.get(f"/expositions/{expo['id']}/versions"))["items"]
    assert [(v["number"], v["action"]) for v in expo_versions] == [(3, "deleted"), (2, "updated"), (1, "created")]
    assert ok(acme.user.get(f"/expositions/{expo['id']}/versions/3"))["state"]["name"] == "store"
    plan_versions = ok(acme.user.get(f"/plans/{plan['id']}/versions"))["items"]
    assert [v["action"] for v in plan_versions] == ["deleted", "created"]

    everything = ok(acme.user.get("/history"))
    kinds = {(v["kind"], v["action"]) for v in everything["items"]}
    assert {("service", "created"), ("plan", "created"), ("plan", "deleted"), ("exposition", "deleted")} <= kinds
    assert ok(acme.user.get("/history", params={"kind": "exposition"}))["total"] == 3
    assert ok(acme.user.get("/history", params={"object_id": plan["id"]}))["total"] == 2
    problem(acme.user.get("/history", params={"kind": "token"}), 422, "kind")
    problem(acme.user.post(f"/plans/{plan['id']}/versions/1/restore"), 409)
    gone = problem(acme.user.post(f"/expositions/{expo['id']}/versions/1/restore"), 409)
    assert gone["detail"].startswith(f"exposition {expo['id']} was deleted (its plan {plan['id']} too)")


def test_the_history_is_paginated_and_bounded(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"])
    for timeout in range(1001, 1011):
        ok(acme.user.patch(f"/plans/{plan['id']}", json={"backend_timeout_ms": timeout}))
    first = ok(acme.user.get("/history", params={"kind": "plan", "limit": 4}))
    second = ok(acme.user.get("/history", params={"kind": "plan", "limit": 4, "offset": 4}))
    assert first["total"] == second["total"] == 11
    numbers = [v["number"] for v in first["items"] + second["items"]]
    assert numbers == [11, 10, 9, 8, 7, 6, 5, 4]
    last = ok(acme.user.get(f"/plans/{plan['id']}/versions", params={"limit": 3, "offset": 9}))
    assert [v["number"] for v in last["items"]] == [2, 1]
    problem(acme.user.get("/history", params={"limit": history.MAX_LISTED + 1}), 422, "limit")
    problem(acme.user.get("/history", params={"offset": -1}), 422, "offset")

    other = api.org("other")  # an organization sees its own history only
    assert ok(other.user.get("/history"))["total"] == 0
    problem(other.user.get(f"/plans/{plan['id']}/versions"), 404)
    problem(other.user.get(f"/plans/{plan['id']}/versions/1"), 404)
    problem(other.user.post(f"/plans/{plan['id']}/versions/1/restore"), 404)


def test_old_versions_are_pruned_beyond_the_retention(api: Api, acme: Org, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history, "RETAINED", 3)
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"])
    for timeout in range(2001, 2006):
        ok(acme.user.patch(f"/plans/{plan['id']}", json={"backend_timeout_ms": timeout}))
    page = ok(acme.user.get(f"/plans/{plan['id']}/versions"))
    assert [v["number"] for v in page["items"]] == [6, 5, 4]
    problem(acme.user.get(f"/plans/{plan['id']}/versions/1"), 404)


def test_a_plan_rolls_back_through_the_update_path(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"], include=["get_item"], inbound_mode="api_key")
    key = plan["api_key"]
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"include": ["delete_item"], "tool_prefix": "x_"}))
    revision = acme.snapshot()["revision"]

    restored = ok(acme.user.post(f"/plans/{plan['id']}/versions/1/restore"))
    assert restored["version"]["number"] == 3 and restored["version"]["action"] == "rolled back"
    assert restored["version"]["restored_from"] == 1
    assert restored["api_key"] is None  # the key clients hold is kept
    assert {c["path"] for c in restored["changes"]} == {"include", "tool_prefix"}
    now = ok(acme.user.get(f"/plans/{plan['id']}"))
    assert now["include"] == ["get_item"] and now["tool_prefix"] == ""
    snapshot = acme.snapshot()
    assert snapshot["revision"] > revision  # gateways receive it as any change
    assert ok(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": 3}))["changes"] == []
    assert ok(acme.user.get(f"/plans/{plan['id']}/versions/3"))["state"]["api_key_prefix"] == key[:15]

    again = ok(acme.user.post(f"/plans/{plan['id']}/versions/3/restore"))  # nothing differs: still recorded
    assert again["version"]["number"] == 4 and again["changes"] == []


def test_a_rollback_is_checked_as_an_update(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    secret = created(acme.user.post("/secrets", json={"name": "k", "kind": "bearer", "values": {"token": "t0k"}}))
    plan = _plan(acme, service["id"], secret_ids=[secret["id"]])
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"secret_ids": []}))
    member = api.member(acme)
    refused = problem(member.post(f"/plans/{plan['id']}/versions/1/restore"), 403)
    assert "attaching secrets to a plan needs the admin role" in refused["detail"]
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["secret_ids"] == []

    assert acme.user.delete(f"/secrets/{secret['id']}").status_code == 204
    gone = problem(acme.user.post(f"/plans/{plan['id']}/versions/1/restore"), 409, "secret_ids")
    assert secret["id"] in gone["detail"] and "deleted" in gone["detail"]
    assert ok(acme.user.get(f"/plans/{plan['id']}/versions"))["total"] == 2  # a refusal records nothing


def test_an_exposition_rolls_back_unless_its_plan_was_deleted(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    first, second = _plan(acme, service["id"], "first"), _plan(acme, service["id"], "second")
    expo = created(acme.user.post("/expositions", json={"plan_id": first["id"], "name": "shop"}))
    ok(acme.user.patch(f"/expositions/{expo['id']}", json={"plan_id": second["id"], "name": "store"}))

    restored = ok(acme.user.post(f"/expositions/{expo['id']}/versions/1/restore"))
    assert restored["version"]["action"] == "rolled back" and restored["version"]["restored_from"] == 1
    now = ok(acme.user.get(f"/expositions/{expo['id']}"))
    assert (now["plan_id"], now["name"]) == (first["id"], "shop")

    ok(acme.user.patch(f"/expositions/{expo['id']}", json={"plan_id": second["id"]}))
    assert acme.user.delete(f"/plans/{first['id']}").status_code == 204  # the exposition is on `second`: it stays
    refused = problem(acme.user.post(f"/expositions/{expo['id']}/versions/1/restore"), 409, "plan_id")
    assert first["id"] in refused["detail"] and "deleted" in refused["detail"]
    assert ok(acme.user.get(f"/expositions/{expo['id']}"))["plan_id"] == second["id"]


def test_secret_values_never_reach_the_history(api: Api, acme: Org) -> None:
    value, rotated = f"v-{random.token_hex(16)}", f"r-{random.token_hex(16)}"
    password = f"p-{random.token_hex(16)}"
    service = import_echo(acme.user)
    secret = created(acme.user.post("/secrets", json={"name": "k", "kind": "bearer", "values": {"token": value}}))
    basic = created(acme.user.post("/secrets", json={"name": "b", "kind": "basic", "fields": {"username": "bob"},
                                                     "values": {"password": password}}))  # fmt: skip
    plan = _plan(acme, service["id"], secret_ids=[secret["id"]])
    ok(acme.user.put(f"/secrets/{secret['id']}/values", json={"values": {"token": rotated}}))
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"secret_ids": [basic["id"]]}))
    assert acme.user.delete(f"/secrets/{secret['id']}").status_code == 204

    secret_versions = ok(acme.user.get(f"/secrets/{secret['id']}/versions"))["items"]
    assert [v["action"] for v in secret_versions] == ["deleted", "updated", "created"]  # the rotation is one
    assert ok(acme.user.get(f"/secrets/{basic['id']}/versions/1"))["state"]["fields"] == {"username": "bob"}
    answers = [
        acme.user.get("/history", params={"limit": 200}),
        acme.user.get(f"/secrets/{secret['id']}/diff", params={"from": 1, "to": 3}),
        acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": 2}),
        acme.user.post(f"/plans/{plan['id']}/versions/1/restore"),  # refused: the secret was deleted
        acme.user.get(f"/secrets/{basic['id']}/versions"),
    ]
    answers += [acme.user.get(f"/secrets/{secret['id']}/versions/{n}") for n in (1, 2, 3)]
    answers += [acme.user.get(f"/plans/{plan['id']}/versions/{n}") for n in (1, 2)]
    with api.plane.session() as session:
        states = list(session.scalars(select(Version.state)))
    stored = orjson.dumps(states).decode()
    for text in [answer.text for answer in answers] + [stored]:
        for secret_value in (value, rotated, password):
            assert secret_value not in text
    assert all("sealed" not in state and "values" not in state for state in states)


def test_services_artifacts_and_organization_policies_have_histories(api: Api, acme: Org) -> None:
    service = import_echo(acme.user)
    changed = ECHO_API.read_bytes().replace(b"title:", b"x-note: changed\n  title:", 1)
    import_echo(acme.user, content=changed)  # re-imported in place
    versions = ok(acme.user.get(f"/services/{service['id']}/versions"))["items"]
    assert [v["action"] for v in versions] == ["updated", "created"]
    assert versions[0]["object_name"] == "echo 1"
    first, second = (ok(acme.user.get(f"/services/{service['id']}/versions/{n}"))["state"] for n in (1, 2))
    assert first["description_sha256"] != second["description_sha256"]
    assert first["operation_count"] == second["operation_count"] > 0
    assert "title" not in orjson.dumps(second).decode()  # hashes, never the description itself

    upload = {"file": ("greet.yaml", prompts("echo", "1"), "application/yaml")}
    attached = created(acme.user.post(f"/services/{service['id']}/artifacts", files=upload))
    artifact = ok(acme.user.get(f"/artifacts/{attached['id']}/versions/1"))
    assert artifact["action"] == "created" and artifact["state"]["capabilities"] == ["hello"]

    rule = {"name": "no-deletes", "when": 'tool == "delete_item"', "effect": "deny"}
    ok(acme.user.put("/organization/policies", json={"policies": [rule]}))
    (policies,) = ok(acme.user.get("/history", params={"kind": "organization"}))["items"]
    assert policies["object_id"] == acme.id and policies["actor"]["role"] == "admin"


def test_a_state_beyond_the_bound_is_kept_as_its_size_and_hash(
    api: Api, acme: Org, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "MAX_STATE_BYTES", 200)
    service = import_echo(acme.user)
    plan = _plan(acme, service["id"], description="x" * 300)
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"backend_timeout_ms": 1234}))
    kept = ok(acme.user.get(f"/plans/{plan['id']}/versions/1"))["state"]
    assert set(kept) == {"omitted"} and kept["omitted"]["bytes"] > 200 and len(kept["omitted"]["sha256"]) == 64
    assert len(ok(acme.user.get(f"/plans/{plan['id']}/diff", params={"from": 1, "to": 2}))["changes"]) == 2
    refused = problem(acme.user.post(f"/plans/{plan['id']}/versions/1/restore"), 409)
    assert "too large" in refused["detail"]
