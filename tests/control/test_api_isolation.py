"""Organizations are walled off: another organization's objects are "not found", whatever the route."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.control.api_harness import ECHO_API, Api, Org, created, import_echo, ok, problem
from tests.control.factories import prompts

SECRET_VALUE = "acme-backend-token-7f3c9a"


@dataclass
class World:
    """Organization A with one object of every kind, and organization B with a service, plan and exposition."""

    a: Org
    b: Org
    ids: dict[str, str]


def build(api: Api) -> World:
    a, b = api.org("acme"), api.org("bravo")
    service = import_echo(a.user, "echo", "1")
    artifact = created(
        a.user.post(
            f"/services/{service['id']}/artifacts",
            files={"file": ("extra.yaml", prompts("echo", "1"), "application/yaml")},
        )
    )
    secret = created(
        a.user.post("/secrets", json={"name": "backend", "kind": "bearer", "values": {"token": SECRET_VALUE}})
    )
    plan = created(
        a.user.post(
            "/plans",
            json={"service_id": service["id"], "name": "main", "secret_id": secret["id"], "include": ["get_*"]},
        )
    )
    group = created(a.user.post("/gateway-groups", json={"name": "edge", "labels": {"zone": "eu"}}))
    exposition = created(a.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    token = created(a.user.post("/tokens", json={"name": "ci"}))
    a.snapshot("gw-a", labels={})
    b_service = import_echo(b.user, "echo-b", "1")
    b_plan = created(b.user.post("/plans", json={"service_id": b_service["id"], "name": "main"}))
    b_exposition = created(b.user.post("/expositions", json={"plan_id": b_plan["id"], "name": "shop"}))
    b_group = next(g for g in ok(b.user.get("/gateway-groups")) if g["name"] == "default")
    b.snapshot("gw-b", labels={})
    ids = {
        "service": service["id"],
        "artifact": artifact["id"],
        "artifact_name": artifact["name"],
        "secret": secret["id"],
        "plan": plan["id"],
        "group": group["id"],
        "exposition": exposition["id"],
        "token": token["id"],
        "b_service": b_service["id"],
        "b_plan": b_plan["id"],
        "b_exposition": b_exposition["id"],
        "b_group": b_group["id"],
    }
    return World(a, b, ids)


def _without(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return sorted(({k: v for k, v in item.items() if k != key} for item in items), key=lambda i: str(i["id"]))


def state(world: World) -> dict[str, Any]:
    """Everything organization A can see, including what its gateways receive (with the secret's value)."""
    a, ids = world.a, world.ids
    snapshot = a.snapshot("gw-a", labels={})
    seen: dict[str, Any] = {"snapshot": snapshot}
    for path in (
        "/organization",
        "/services",
        f"/services/{ids['service']}",
        f"/services/{ids['service']}/artifacts",
        "/plans",
        f"/plans/{ids['plan']}",
        "/secrets",
        f"/secrets/{ids['secret']}",
        "/gateway-groups",
        f"/gateway-groups/{ids['group']}",
        "/expositions",
        f"/expositions/{ids['exposition']}",
    ):
        seen[path] = ok(a.user.get(path))
    seen["/tokens"] = _without(ok(a.user.get("/tokens")), "last_used_at")
    seen["/gateways"] = _without(ok(a.user.get("/gateways")), "last_seen")
    return seen


def test_the_world_is_what_the_isolation_tests_assume(api: Api) -> None:
    """A's state holds every object (so that "unchanged" means something), the secret included."""
    world = build(api)
    seen = state(world)
    assert [e["id"] for e in seen["snapshot"]["expositions"]] == [world.ids["exposition"]]
    credentials = seen["snapshot"]["expositions"][0]["members"][0]["credentials"]
    assert credentials == [{"kind": "bearer", "fields": {}, "values": {"token": SECRET_VALUE}}]
    assert len(seen[f"/services/{world.ids['service']}/artifacts"]) == 2
    assert {t["id"] for t in seen["/tokens"]} >= {world.ids["token"]}
    assert [g["name"] for g in seen["/gateways"]] == ["gw-a"]


LISTS = [
    ("/services", "service"),
    ("/plans", "plan"),
    ("/secrets", "secret"),
    ("/gateway-groups", "group"),
    ("/expositions", "exposition"),
    ("/tokens", "token"),
    ("/gateways", "gateway"),
]


def test_lists_show_only_the_callers_objects(api: Api) -> None:
    world = build(api)
    a, b = world.a, world.b
    a_listed = {path: {item["id"] for item in ok(a.user.get(path))} for path, _ in LISTS}
    b_listed = {path: {item["id"] for item in ok(b.user.get(path))} for path, _ in LISTS}
    for path, kind in LISTS:
        assert a_listed[path], path  # A has objects of every kind...
        assert b_listed[path] or kind == "secret", path
        assert not a_listed[path] & b_listed[path], path  # ...and B sees none of them
    assert world.ids["service"] in a_listed["/services"]
    assert b_listed["/services"] == {world.ids["b_service"]}
    assert b_listed["/plans"] == {world.ids["b_plan"]}
    assert b_listed["/expositions"] == {world.ids["b_exposition"]}
    assert b_listed["/gateway-groups"] == {world.ids["b_group"]}
    assert {t["name"] for t in ok(b.user.get("/tokens"))} == {"tester", "edge"}
    assert [g["name"] for g in ok(b.user.get("/gateways"))] == ["gw-b"]
    assert ok(b.user.get("/plans", params={"service_id": world.ids["service"]})) == []
    assert ok(b.user.get("/organization"))["name"] == "bravo"
    assert ok(a.user.get("/organization"))["name"] == "acme"


def _artifact_upload() -> dict[str, Any]:
    return {"files": {"file": ("stolen.yaml", b"x: 1\n", "application/yaml")}}


# (resource, method, path, request keywords): every one must answer 404 to organization B.
ATTEMPTS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("services", "GET", "/services/{service}", {}),
    ("services", "DELETE", "/services/{service}", {}),
    ("services", "GET", "/services/{service}/artifacts", {}),
    ("services", "POST", "/services/{service}/artifacts", _artifact_upload()),
    ("services", "POST", "/plans", {"json": {"service_id": "{service}", "name": "mine"}}),
    ("artifacts", "DELETE", "/artifacts/{artifact}", {}),
    ("plans", "GET", "/plans/{plan}", {}),
    ("plans", "PATCH", "/plans/{plan}", {"json": {"description": "taken over"}}),
    ("plans", "PATCH", "/plans/{plan}", {"json": {"inbound_mode": "none"}}),
    ("plans", "POST", "/plans/{plan}/api-key", {}),
    ("plans", "POST", "/plans/{plan}/duplicate", {"json": {"name": "copy"}}),
    ("plans", "DELETE", "/plans/{plan}", {}),
    ("plans", "POST", "/expositions", {"json": {"plan_id": "{plan}"}}),
    ("plans", "POST", "/expositions", {"json": {"plan_id": "{plan}", "group_id": "{b_group}", "name": "x"}}),
    ("plans", "PATCH", "/expositions/{b_exposition}", {"json": {"plan_id": "{plan}"}}),
    ("secrets", "GET", "/secrets/{secret}", {}),
    ("secrets", "PUT", "/secrets/{secret}/values", {"json": {"values": {"token": "stolen"}}}),
    ("secrets", "DELETE", "/secrets/{secret}", {}),
    ("secrets", "POST", "/plans", {"json": {"service_id": "{b_service}", "name": "p2", "secret_id": "{secret}"}}),
    ("secrets", "PATCH", "/plans/{b_plan}", {"json": {"secret_id": "{secret}"}}),
    ("groups", "GET", "/gateway-groups/{group}", {}),
    ("groups", "PATCH", "/gateway-groups/{group}", {"json": {"labels": {"zone": "us"}}}),
    ("groups", "DELETE", "/gateway-groups/{group}", {}),
    ("groups", "POST", "/expositions", {"json": {"plan_id": "{b_plan}", "group_id": "{group}"}}),
    ("groups", "PATCH", "/expositions/{b_exposition}", {"json": {"group_id": "{group}"}}),
    ("expositions", "GET", "/expositions/{exposition}", {}),
    ("expositions", "PATCH", "/expositions/{exposition}", {"json": {"name": "renamed"}}),
    ("expositions", "PATCH", "/expositions/{exposition}", {"json": {"plan_id": "{b_plan}"}}),
    ("expositions", "POST", "/expositions/{exposition}/duplicate", {"json": {"name": "copy"}}),
    ("expositions", "POST", "/expositions/{exposition}/duplicate", {"json": {}}),
    ("expositions", "DELETE", "/expositions/{exposition}", {}),
    ("tokens", "DELETE", "/tokens/{token}", {}),
]


def _fill(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**ids)
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    return value


RESOURCES = sorted({resource for resource, *_ in ATTEMPTS})


@pytest.mark.parametrize("resource", RESOURCES)
def test_another_organization_cannot_reach_these_objects(api: Api, resource: str) -> None:
    world = build(api)
    before = state(world)
    b_named = (f"/expositions/{world.ids['b_exposition']}", f"/plans/{world.ids['b_plan']}")
    b_before = [ok(world.b.user.get(path)) for path in b_named]
    attempts = [(method, path, kwargs) for name, method, path, kwargs in ATTEMPTS if name == resource]
    assert attempts
    for method, path, kwargs in attempts:
        url = _fill(path, world.ids)
        sent = {k: (_fill(v, world.ids) if k == "json" else v) for k, v in kwargs.items()}
        response = world.b.user.request(method, url, **sent)
        body = problem(response, 404)
        assert body["title"] == "Not found", (method, path)
        assert "acme" not in body["detail"], body  # nothing about the owner leaks
    assert state(world) == before
    # B's own objects that the attempts named are unchanged too, and nothing was created
    assert [ok(world.b.user.get(path)) for path in b_named] == b_before
    assert [p["name"] for p in ok(world.b.user.get("/plans"))] == ["main"]
    assert [e["name"] for e in ok(world.b.user.get("/expositions"))] == ["shop"]
    assert [a["role"] for a in ok(world.b.user.get(f"/services/{world.ids['b_service']}/artifacts"))] == ["main"]


def test_another_organization_cannot_use_an_attached_artifact(api: Api) -> None:
    world = build(api)
    before = state(world)
    response = world.b.user.patch(f"/plans/{world.ids['b_plan']}", json={"artifacts": [world.ids["artifact_name"]]})
    problem(response, 422, "artifacts")
    assert ok(world.b.user.get(f"/plans/{world.ids['b_plan']}"))["artifacts"] == []
    assert state(world) == before


def test_same_names_in_another_organization_are_separate_objects(api: Api) -> None:
    """B may reuse A's names (service name+version, secret, group, exposition, gateway) without touching A's."""
    world = build(api)
    before = state(world)
    b = world.b
    imported = b.user.post(
        "/services",
        files={"file": ("echo.yaml", ECHO_API.read_bytes(), "application/yaml")},
        data={"name": "echo", "version": "1"},
    )
    service = created(imported)
    assert service["created"] is True
    assert service["id"] != world.ids["service"]
    secret = created(b.user.post("/secrets", json={"name": "backend", "kind": "bearer", "values": {"token": "b-own"}}))
    assert secret["id"] != world.ids["secret"]
    group = created(b.user.post("/gateway-groups", json={"name": "edge"}))
    assert group["id"] != world.ids["group"]
    plan = created(b.user.post("/plans", json={"service_id": service["id"], "name": "main", "secret_id": secret["id"]}))
    exposition = created(b.user.post("/expositions", json={"plan_id": plan["id"], "name": "shop2"}))
    assert exposition["endpoints"][0] == "/mcp/bravo/shop2"
    b.snapshot("gw-a", labels={"zone": "b"})
    assert sorted(g["name"] for g in ok(b.user.get("/gateways"))) == ["gw-a", "gw-b"]
    assert state(world) == before
    b_snapshot = b.snapshot("gw-b", labels={})
    assert SECRET_VALUE not in str(b_snapshot)
    assert {e["organization"] for e in b_snapshot["expositions"]} == {"bravo"}
