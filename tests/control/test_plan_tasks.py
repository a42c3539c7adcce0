"""A plan's task mode (`tasks`): stored in its canonical text, NULL for off, refused naming the field, copied by
duplication, carried by snapshots, and added by migration 0008 (on SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text

from apimcp.control.store import Store
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem


def _plan(org: Org, **values: Any) -> dict[str, Any]:
    service = import_echo(org.user)
    body = {"service_id": service["id"], "name": "main", "backend_endpoint": "https://echo.example/v1", **values}
    plan: dict[str, Any] = created(org.user.post("/plans", json=body))
    return plan


def test_a_task_mode_is_stored_canonical_and_off_is_null(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, tasks="slow:2s")
    assert plan["tasks"] == "slow:2s"
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["tasks"] == "slow:2s"

    path = f"/plans/{plan['id']}"
    assert ok(acme.user.patch(path, json={"tasks": "all"}))["tasks"] == "all"
    assert ok(acme.user.get(path))["tasks"] == "all"
    assert ok(acme.user.patch(path, json={"description": "untouched mode"}))["tasks"] == "all"
    assert ok(acme.user.patch(path, json={"tasks": "slow:1500ms"}))["tasks"] == "slow:1500ms"
    assert ok(acme.user.patch(path, json={"tasks": " slow "}))["tasks"] == "slow:1s"
    assert ok(acme.user.patch(path, json={"tasks": "slow:3000ms"}))["tasks"] == "slow:3s"
    assert ok(acme.user.patch(path, json={"tasks": "off"}))["tasks"] is None
    assert ok(acme.user.get(path))["tasks"] is None
    assert ok(acme.user.patch(path, json={"tasks": "all"}))["tasks"] == "all"
    assert ok(acme.user.patch(path, json={"tasks": None}))["tasks"] is None

    with api.plane.session() as session:
        stored = session.execute(text("SELECT tasks FROM plans WHERE id = :id"), {"id": plan["id"]}).scalar()
    assert stored is None  # off is NULL, not the text "off"


def test_a_new_plan_has_tasks_off(api: Api) -> None:
    acme = api.org("acme")
    assert _plan(acme)["tasks"] is None
    assert _plan(api.org("bravo"), tasks="off")["tasks"] is None


BAD = [
    ("sometimes", 'task mode \'sometimes\' must be "off", "all" or "slow"'),
    ("all:5s", 'task mode "all" takes no duration'),
    ("slow:0s", "the duration must be from 1 ms"),
    ("slow:2h", 'must be "off", "all" or "slow"'),
    ("slow:7200s", "to 3600 s"),
    ("", 'must be "off", "all" or "slow"'),
    (5, "tasks: Input should be a valid string"),
    (True, "tasks: Input should be a valid string"),
]


def test_a_bad_task_mode_is_refused_naming_the_field(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, tasks="all")
    other = import_echo(acme.user, name="other")
    for value, says in BAD:
        refused = problem(acme.user.patch(f"/plans/{plan['id']}", json={"tasks": value}), 422, "tasks")
        assert says in refused["detail"], (value, refused)
        body = {"service_id": other["id"], "name": "bad", "backend_endpoint": "https://echo.example/v1", "tasks": value}
        assert says in problem(acme.user.post("/plans", json=body), 422, "tasks")["detail"]
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["tasks"] == "all"  # unchanged
    assert [p["name"] for p in ok(acme.user.get("/plans"))] == ["main"]


def test_duplicating_a_plan_copies_its_task_mode(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, tasks="slow:500ms")
    copy = created(acme.user.post(f"/plans/{plan['id']}/duplicate", json={"name": "copy"}))
    assert copy["tasks"] == "slow:500ms"


def test_the_snapshot_carries_the_task_mode_of_each_exposition(api: Api) -> None:
    acme = api.org("acme")
    plan = _plan(acme, tasks="slow:2s")
    exposition = created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    [entry] = acme.snapshot()["expositions"]
    assert (entry["id"], entry["tasks"]) == (exposition["id"], "slow:2s")
    ok(acme.user.patch(f"/plans/{plan['id']}", json={"tasks": "off"}))
    [entry] = acme.snapshot()["expositions"]
    assert entry["tasks"] is None


def _columns(store: Store) -> set[str]:
    return {column["name"] for column in inspect(store.engine).get_columns("plans")}


def test_migration_0008_adds_a_null_task_mode_and_takes_it_away(database_url: str) -> None:
    store = Store(database_url)
    try:
        store.migrate_to("0007")
        assert "tasks" not in _columns(store)
        with store.engine.begin() as connection:
            for statement in (
                "INSERT INTO organizations (id, name, created_at) VALUES ('o', 'acme', :now)",
                "INSERT INTO services (id, organization_id, name, version, kind, compiled, compiled_hash, "
                "operation_count, created_at, updated_at) VALUES ('s', 'o', 'echo', '1', 'openapi', '{}', 'h', 0, "
                ":now, :now)",
                "INSERT INTO plans (id, organization_id, service_id, name, backend_timeout_ms, include, exclude, "
                "inbound, cache, artifacts, tool_prefix, output_schemas, audit, created_at, updated_at) VALUES "
                "('p', 'o', 's', 'p', 1000, '[]', '[]', '{}', '{}', '[]', '', true, false, :now, :now)",
            ):
                connection.execute(text(statement), {"now": "2026-01-01 00:00:00"})
        store.migrate_to("0008")
        with store.engine.begin() as connection:
            assert connection.execute(text("SELECT id, tasks FROM plans")).all() == [("p", None)]
            connection.execute(text("UPDATE plans SET tasks = 'slow:2s'"))
        store.migrate_to("0007", down=True)
        assert "tasks" not in _columns(store)
        with store.engine.connect() as connection:
            assert connection.execute(text("SELECT id FROM plans")).scalars().all() == ["p"]
    finally:
        store.dispose()
