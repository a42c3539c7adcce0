"""Plans with their inbound API keys, expositions and their endpoints, and what gateways fetch."""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from apimcp.control.api.sync_routes import LONG_POLL_SECONDS
from apimcp.control.models import GatewayGroup
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem
from tests.control.factories import prompts


def _service_and_plan(org: Org, **plan: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    service = import_echo(org.user)
    return service, created(org.user.post("/plans", json={"service_id": service["id"], "name": "main", **plan}))


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


# --- plans -------------------------------------------------------------------------------------------


def test_a_plan_holds_what_it_was_given(api: Api) -> None:
    acme = api.org("acme")
    service = import_echo(acme.user)
    created(
        acme.user.post(
            f"/services/{service['id']}/artifacts",
            data={"name": "hints"},
            files={"file": ("hints.yaml", prompts("echo", "1"), "application/yaml")},
        )
    )
    body = {
        "service_id": service["id"],
        "name": "reader",
        "description": "read-only tools",
        "backend_endpoint": "https://echo.example.com/v1",
        "backend_timeout_ms": 5000,
        "include": ["get_*", "GET /query"],
        "exclude": ["get_media"],
        "cache": {"tools/list": {"ttl_ms": 60000, "scope": "public"}, "resources/read": {"ttl_ms": 0}},
        "artifacts": ["hints"],
        "tool_prefix": "echo_",
        "output_schemas": False,
    }
    plan = created(acme.user.post("/plans", json=body))
    for key, value in body.items():
        if key != "cache":
            assert plan[key] == value, key
    assert plan["cache"] == {
        "tools/list": {"ttl_ms": 60000, "scope": "public"},
        "resources/read": {"ttl_ms": 0, "scope": "private"},
    }
    assert plan["inbound_mode"] == "none"
    assert plan["api_key"] is None
    assert plan["secret_id"] is None
    fetched = ok(acme.user.get(f"/plans/{plan['id']}"))
    assert fetched == {k: v for k, v in plan.items() if k != "api_key"}
    assert ok(acme.user.get("/plans", params={"service_id": service["id"]})) == [fetched]

    copy = created(acme.user.post(f"/plans/{plan['id']}/duplicate", json={"name": "reader-2"}))
    assert copy["id"] != plan["id"]
    assert copy["name"] == "reader-2"
    for key in body.keys() - {"name"}:
        assert copy[key] == plan[key], key


def test_a_plan_update_answers_what_a_read_then_shows(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    time.sleep(0.01)
    changed = ok(acme.user.patch(f"/plans/{plan['id']}", json={"description": "now described", "include": ["get_*"]}))
    assert changed["description"] == "now described"
    assert changed["include"] == ["get_*"]
    assert changed["exclude"] == []
    assert _at(changed["updated_at"]) > _at(plan["updated_at"])
    assert ok(acme.user.get(f"/plans/{plan['id']}")) == {k: v for k, v in changed.items() if k != "api_key"}
    # only what is sent changes; null clears the selection
    cleared = ok(acme.user.patch(f"/plans/{plan['id']}", json={"include": None}))
    assert cleared["include"] == []
    assert cleared["description"] == "now described"


def test_an_api_key_plan_shows_its_key_once(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme, inbound_mode="api_key")
    key = plan["api_key"]
    assert key.startswith("apimcp_key_")
    assert len(key) > 30
    assert plan["inbound_mode"] == "api_key"
    created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))

    reads = [
        acme.user.get(f"/plans/{plan['id']}"),
        acme.user.get("/plans"),
        acme.user.patch(f"/plans/{plan['id']}", json={"description": "keyed"}),
        acme.user.get("/expositions"),
    ]
    for response in reads:
        assert response.status_code == 200, response.text
        assert key not in response.text
    assert "api_key" not in reads[0].json()
    assert reads[0].json()["inbound_mode"] == "api_key"
    assert reads[2].json()["api_key"] is None  # an update that does not renew the key shows none
    snapshot = acme.snapshot("gw")
    assert snapshot["expositions"][0]["inbound"] == {"mode": "api_key", "key_hash": _sha(key)}

    renewed = ok(acme.user.post(f"/plans/{plan['id']}/api-key"))
    new_key = renewed["api_key"]
    assert new_key.startswith("apimcp_key_")
    assert new_key != key
    assert new_key not in acme.user.get(f"/plans/{plan['id']}").text
    snapshot = acme.snapshot("gw")
    assert snapshot["expositions"][0]["inbound"] == {"mode": "api_key", "key_hash": _sha(new_key)}

    copy = created(acme.user.post(f"/plans/{plan['id']}/duplicate", json={"name": "copy"}))
    assert copy["inbound_mode"] == "api_key"
    assert copy["api_key"].startswith("apimcp_key_")
    assert copy["api_key"] not in (key, new_key)

    opened = ok(acme.user.patch(f"/plans/{plan['id']}", json={"inbound_mode": "none"}))
    assert opened["inbound_mode"] == "none"
    assert opened["api_key"] is None
    snapshot = acme.snapshot("gw")
    assert snapshot["expositions"][0]["inbound"] == {"mode": "none"}


def test_an_open_plan_gets_a_key_on_request(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    assert plan["api_key"] is None
    renewed = ok(acme.user.post(f"/plans/{plan['id']}/api-key"))
    assert renewed["inbound_mode"] == "api_key"
    assert renewed["api_key"].startswith("apimcp_key_")
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["inbound_mode"] == "api_key"


# --- expositions -------------------------------------------------------------------------------------


def test_exposition_endpoints(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    named = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    assert named["endpoints"] == ["/mcp/acme/shop", f"/mcp/{named['id']}", "/mcp/acme/echo/1"]
    default = next(g for g in ok(acme.user.get("/gateway-groups")) if g["name"] == "default")
    assert named["group_id"] == default["id"]
    assert named["plan_id"] == plan["id"]
    unnamed = created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))
    assert unnamed["name"] is None
    assert unnamed["endpoints"] == [f"/mcp/{unnamed['id']}", "/mcp/acme/echo/1"]
    assert ok(acme.user.get(f"/expositions/{named['id']}")) == named
    assert ok(acme.user.get("/expositions")) == sorted([named, unnamed], key=lambda e: e["id"])


def test_a_service_name_with_spaces_is_written_with_plus_signs(api: Api) -> None:
    acme = api.org("acme")
    service = import_echo(acme.user, "Echo API", "2.1")
    plan = created(acme.user.post("/plans", json={"service_id": service["id"], "name": "main"}))
    exposition = created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))
    assert exposition["endpoints"][-1] == "/mcp/acme/Echo+API/2.1"


def test_an_exposition_changes_plan_group_and_name(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    other_service = import_echo(acme.user, "other", "3")
    other_plan = created(acme.user.post("/plans", json={"service_id": other_service["id"], "name": "main"}))
    edge = created(acme.user.post("/gateway-groups", json={"name": "edge", "labels": {"zone": "eu"}}))
    exposition = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))

    renamed = ok(acme.user.patch(f"/expositions/{exposition['id']}", json={"name": "store"}))
    assert renamed["name"] == "store"
    assert renamed["endpoints"][0] == "/mcp/acme/store"
    assert renamed["plan_id"] == plan["id"]
    moved = ok(acme.user.patch(f"/expositions/{exposition['id']}", json={"plan_id": other_plan["id"]}))
    assert moved["plan_id"] == other_plan["id"]
    assert moved["endpoints"] == ["/mcp/acme/store", f"/mcp/{exposition['id']}", "/mcp/acme/other/3"]
    regrouped = ok(acme.user.patch(f"/expositions/{exposition['id']}", json={"group_id": edge["id"]}))
    assert regrouped["group_id"] == edge["id"]
    assert regrouped["name"] == "store"
    unnamed = ok(acme.user.patch(f"/expositions/{exposition['id']}", json={"name": None}))
    assert unnamed["name"] is None
    assert unnamed["endpoints"] == [f"/mcp/{exposition['id']}", "/mcp/acme/other/3"]
    assert ok(acme.user.get(f"/expositions/{exposition['id']}")) == unnamed
    # the freed name can be used again
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "store"}))
    problem(acme.user.patch(f"/expositions/{exposition['id']}", json={"name": "Not Valid"}), 422, "name")
    problem(acme.user.patch(f"/expositions/{exposition['id']}", json={"colour": "red"}), 422, "colour")
    assert ok(acme.user.get(f"/expositions/{exposition['id']}")) == unnamed


def test_an_exposition_is_duplicated(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    edge = created(acme.user.post("/gateway-groups", json={"name": "edge"}))
    original = created(
        acme.user.post("/expositions", json={"plan_id": plan["id"], "group_id": edge["id"], "name": "a"})
    )
    copy = created(acme.user.post(f"/expositions/{original['id']}/duplicate", json={"name": "b"}))
    assert copy["id"] != original["id"]
    assert (copy["plan_id"], copy["group_id"], copy["name"]) == (plan["id"], edge["id"], "b")
    assert copy["endpoints"] == ["/mcp/acme/b", f"/mcp/{copy['id']}", "/mcp/acme/echo/1"]
    anonymous = created(acme.user.post(f"/expositions/{original['id']}/duplicate", json={}))
    assert anonymous["name"] is None
    assert anonymous["group_id"] == edge["id"]
    assert len(ok(acme.user.get("/expositions"))) == 3
    assert acme.user.delete(f"/expositions/{original['id']}").status_code == 204
    problem(acme.user.get(f"/expositions/{original['id']}"), 404)
    assert {e["id"] for e in ok(acme.user.get("/expositions"))} == {copy["id"], anonymous["id"]}


# --- gateway sync ------------------------------------------------------------------------------------


def test_a_gateway_snapshot_holds_its_organization_only_and_registers_the_gateway(api: Api) -> None:
    acme, bravo = api.org("acme"), api.org("bravo")
    service, plan = _service_and_plan(acme, backend_endpoint="https://echo.example.com")
    edge = created(acme.user.post("/gateway-groups", json={"name": "edge", "labels": {"zone": "eu", "tier": "1"}}))
    everywhere = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    in_eu = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "group_id": edge["id"]}))
    _, bravo_plan = _service_and_plan(bravo)
    created(bravo.user.post("/expositions", json={"plan_id": bravo_plan["id"], "name": "shop"}))

    registration = {"name": "gw-1", "labels": {}, "fqdns": ["mcp.acme.test"], "version": "1.2.3"}
    response = acme.snapshot_response(**registration)
    snapshot = ok(response)
    assert response.headers["cache-control"] == "no-store"
    assert isinstance(snapshot["revision"], int)
    assert snapshot["revision"] > 0
    assert [e["id"] for e in snapshot["expositions"]] == sorted([everywhere["id"], in_eu["id"]])
    assert {e["organization"] for e in snapshot["expositions"]} == {"acme"}
    first = next(e for e in snapshot["expositions"] if e["id"] == everywhere["id"])
    assert first["name"] == "shop"
    [member] = first["members"]
    assert member["service"]["id"] == service["id"]
    assert member["plan"] == plan["id"]
    assert member["backend_endpoint"] == "https://echo.example.com"
    assert set(snapshot["services"]) == {member["service"]["hash"]}

    [gateway] = ok(acme.user.get("/gateways"))
    assert (gateway["name"], gateway["labels"], gateway["fqdns"], gateway["version"]) == (
        "gw-1",
        {},
        ["mcp.acme.test"],
        "1.2.3",
    )
    assert datetime.fromisoformat(gateway["last_seen"]).tzinfo is not None
    assert ok(bravo.user.get("/gateways")) == []

    # a gateway with labels serves only the groups that carry them; known services are not resent
    labelled = acme.snapshot("gw-eu", labels={"zone": "eu"}, known_services=[member["service"]["hash"]])
    assert [e["id"] for e in labelled["expositions"]] == [in_eu["id"]]
    assert labelled["services"] == {}
    assert sorted(g["name"] for g in ok(acme.user.get("/gateways"))) == ["gw-1", "gw-eu"]

    # registering again refreshes the same gateway
    acme.snapshot(**{**registration, "version": "1.2.4"})
    again = next(g for g in ok(acme.user.get("/gateways")) if g["name"] == "gw-1")
    assert again["id"] == gateway["id"]
    assert again["version"] == "1.2.4"
    assert _at(again["last_seen"]) >= _at(gateway["last_seen"])

    problem(acme.snapshot_response("bad name!"), 422, "name")
    problem(acme.gateway.post("/gateway/snapshot", json={}), 422, "name")


def test_the_revision_is_per_organization(api: Api) -> None:
    acme, bravo = api.org("acme"), api.org("bravo")
    _, plan = _service_and_plan(acme)
    created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))
    acme_revision = acme.snapshot("gw")["revision"]
    assert ok(acme.gateway.get("/gateway/changes", params={"since": 0}))["revision"] == acme_revision
    _, bravo_plan = _service_and_plan(bravo)
    created(bravo.user.post("/expositions", json={"plan_id": bravo_plan["id"]}))
    bravo_revision = ok(bravo.gateway.get("/gateway/changes", params={"since": 0}))["revision"]
    assert bravo_revision > acme_revision
    # bravo's changes did not move acme's revision
    assert ok(acme.gateway.get("/gateway/changes", params={"since": acme_revision - 1}))["revision"] == acme_revision
    assert acme.snapshot("gw")["revision"] == acme_revision


def test_a_waiting_gateway_learns_of_a_change_at_once(api: Api) -> None:
    acme = api.org("acme")
    _, plan = _service_and_plan(acme)
    group = created(acme.user.post("/gateway-groups", json={"name": "edge"}))
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "group_id": group["id"]}))
    current = acme.snapshot("gw")["revision"]
    assert current > 0
    changed: list[int] = []

    def change() -> None:
        time.sleep(0.2)
        changed.append(ok(acme.user.patch(f"/gateway-groups/{group['id']}", json={"labels": {"zone": "eu"}}))["id"])

    worker = threading.Thread(target=change)
    started = time.monotonic()
    worker.start()
    try:
        answer = ok(acme.gateway.get("/gateway/changes", params={"since": current, "name": "gw"}, timeout=40))
    finally:
        worker.join(30)
    elapsed = time.monotonic() - started
    assert changed == [group["id"]]
    assert answer["revision"] > current
    # it waited for the change (made 0.2 s in), and not for the end of its 25 s long poll
    assert 0.15 < elapsed < LONG_POLL_SECONDS / 2, elapsed  # timing-ok: half the long poll, 50 times the wait
    snapshot = acme.snapshot("gw", labels={"zone": "eu"})
    assert snapshot["revision"] == answer["revision"]
    assert len(snapshot["expositions"]) == 1


def test_change_requests_are_validated(api: Api) -> None:
    acme = api.org("acme")
    problem(acme.gateway.get("/gateway/changes"), 422, "since")
    problem(acme.gateway.get("/gateway/changes", params={"since": "latest"}), 422, "since")


# --- what every answer shares ------------------------------------------------------------------------


def test_a_created_object_is_visible_to_the_very_next_request(api: Api) -> None:
    """The unit of work commits before the answer leaves: a client never reads its own write as missing."""
    acme = api.org("acme")

    def mark(session: Session, _: object) -> None:
        if any(isinstance(o, GatewayGroup) and o.name.startswith("slow") for o in session.new):
            session.info["slow"] = True

    def slow_commit(session: Session) -> None:
        if session.info.pop("slow", False):  # the commit of a new group takes its time, as under load
            time.sleep(0.3)

    event.listen(Session, "after_flush", mark)
    event.listen(Session, "before_commit", slow_commit)
    try:
        for number in range(3):
            group = created(acme.user.post("/gateway-groups", json={"name": f"slow{number}"}))
            assert ok(acme.user.get(f"/gateway-groups/{group['id']}")) == group
    finally:
        event.remove(Session, "before_commit", slow_commit)
        event.remove(Session, "after_flush", mark)


def test_timestamps_carry_their_time_zone(api: Api) -> None:
    acme = api.org("acme")
    service, plan = _service_and_plan(acme)
    secret = created(acme.user.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "t"}}))
    acme.snapshot("gw")
    stamps: list[str] = []
    for path in ("/services", "/plans", "/secrets", "/gateway-groups", "/tokens", "/gateways"):
        for item in ok(acme.user.get(path)):
            stamps += [v for k, v in item.items() if k.endswith("_at") or k == "last_seen" if v is not None]
    stamps += [a["created_at"] for a in ok(acme.user.get(f"/services/{service['id']}/artifacts"))]
    assert len(stamps) >= 12
    for stamp in stamps:
        assert datetime.fromisoformat(stamp).tzinfo is not None, stamp
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["created_at"] == plan["created_at"]
    assert ok(acme.user.get(f"/secrets/{secret['id']}"))["created_at"] == secret["created_at"]
