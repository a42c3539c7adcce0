"""Plans and expositions (on SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text

from apimcp.control.domain import expositions, groups, plans, secrets, services
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Exposition, GatewayGroup, Plan
from apimcp.control.plane import ControlPlane
from tests.control.factories import dump_all_rows, import_echo, import_spec, new_org, prompts, sha256, spec


@pytest.fixture
def acme(plane: ControlPlane) -> str:
    return new_org(plane, "acme")


@pytest.fixture
def echo(plane: ControlPlane, acme: str) -> str:
    """The echo service of `acme`."""
    return import_echo(plane, acme).service.id


def _plan(plane: ControlPlane, organization_id: str, service_id: str, name: str = "main", **values: Any) -> Plan:
    with plane.session() as session:
        plan, key = plans.create(session, organization_id, service_id, name, values)
    assert key is None
    return plan


def _refused(plane: ControlPlane, error: type[Exception], call: Any, *args: Any) -> Any:
    with pytest.raises(error) as caught, plane.session() as session:
        call(session, *args)
    return caught.value


def _count(plane: ControlPlane, model: type) -> int:
    with plane.session() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


# -- plans ------------------------------------------------------------------------------------


def test_a_new_plan_has_the_defaults(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert (stored.organization_id, stored.service_id, stored.name) == (acme, echo, "main")
    assert stored.backend_endpoint is None
    assert stored.backend_timeout_ms == 30_000
    assert (stored.include, stored.exclude, stored.cache, stored.artifacts) == ([], [], {}, [])
    assert stored.inbound == {"mode": "none"}
    assert (stored.tool_prefix, stored.output_schemas, stored.secret_id) == ("", True, None)


def test_a_plan_stores_what_it_is_given(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        services.attach(session, acme, echo, "overlay.yaml", prompts())
    plan = _plan(
        plane,
        acme,
        echo,
        description="read only",
        backend_endpoint="https://echo.example/v1",
        backend_timeout_ms=2_500,
        include=["get_*", "GET /query"],
        exclude=["getStatus"],
        artifacts=["overlay.yaml"],
        tool_prefix="echo_",
        output_schemas=False,
    )
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert stored.description == "read only"
    assert stored.backend_endpoint == "https://echo.example/v1"
    assert stored.backend_timeout_ms == 2_500
    assert (stored.include, stored.exclude) == (["get_*", "GET /query"], ["getStatus"])
    assert stored.artifacts == ["overlay.yaml"]
    assert (stored.tool_prefix, stored.output_schemas) == ("echo_", False)


def test_plan_patterns_match_tool_names_with_or_without_the_prefix(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo, tool_prefix="echo_", include=["echo_get_item", "delete_item"])
    assert plan.include == ["echo_get_item", "delete_item"]
    refused = _refused(plane, Invalid, plans.update, acme, plan.id, {"tool_prefix": "e_"})  # the patterns re-checked
    assert (refused.field, str(refused)) == ("include", "these patterns select no operation of Echo API: echo_get_item")


def test_a_plan_name_is_unique_per_service(plane: ControlPlane, acme: str, echo: str) -> None:
    other = import_spec(plane, acme, spec()).service.id
    _plan(plane, acme, echo, "main")
    refused = _refused(plane, Conflict, plans.create, acme, echo, "main", {})
    assert refused.field == "name"
    assert _plan(plane, acme, other, "main").service_id == other
    assert _count(plane, Plan) == 2


def test_an_invalid_plan_name_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    for name in ("no spaces", "main\n"):  # a `$` once let the last through
        assert _refused(plane, Invalid, plans.create, acme, echo, name, {}).field == "name"


def test_a_plan_of_another_organizations_service_is_not_found(plane: ControlPlane, acme: str, echo: str) -> None:
    globex = new_org(plane, "globex")
    _refused(plane, NotFound, plans.create, globex, echo, "main", {})
    assert _count(plane, Plan) == 0


def test_a_service_without_servers_needs_a_backend_endpoint(plane: ControlPlane, acme: str) -> None:
    service_id = import_spec(plane, acme, spec(server=None)).service.id
    refused = _refused(plane, Invalid, plans.create, acme, service_id, "main", {})
    assert refused.field == "backend_endpoint"
    plan = _plan(plane, acme, service_id, backend_endpoint="http://10.0.0.1:8080/api")
    assert plan.backend_endpoint == "http://10.0.0.1:8080/api"
    refused = _refused(plane, Invalid, plans.update, acme, plan.id, {"backend_endpoint": None})
    assert refused.field == "backend_endpoint"


def test_a_backend_endpoint_is_an_http_url(plane: ControlPlane, acme: str, echo: str) -> None:
    for endpoint in ("ftp://example.com", "example.com", "https://", "http:// spaced"):
        refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {"backend_endpoint": endpoint})
        assert refused.field == "backend_endpoint", endpoint
    assert _count(plane, Plan) == 0


def test_updating_a_plan(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        updated, key = plans.update(
            session, acme, plan.id, {"description": "v2", "include": ["getItem"], "backend_timeout_ms": 100}
        )
    assert key is None
    assert updated.id == plan.id
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert (stored.description, stored.include, stored.backend_timeout_ms) == ("v2", ["getItem"], 100)
    assert stored.exclude == []


def test_an_unknown_plan_field_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    refused = _refused(plane, Invalid, plans.update, acme, plan.id, {"backend": "x"})
    assert refused.field == "backend"


@pytest.mark.parametrize("field", ["include", "exclude"])
def test_patterns_that_select_nothing_are_refused(plane: ControlPlane, acme: str, echo: str, field: str) -> None:
    refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {field: ["getItem", "get_itme"]})
    assert refused.field == field
    assert "get_itme" in refused.detail
    assert "getItem" not in refused.detail
    assert _count(plane, Plan) == 0


def test_patterns_match_tool_names_operation_ids_signatures_and_wildcards(
    plane: ControlPlane, acme: str, echo: str
) -> None:
    patterns = ["get_item", "replaceItem", "delete /items/{itemId}", "GET /styles/*", "post_*", "?low"]
    plan = _plan(plane, acme, echo, include=patterns)
    assert plan.include == patterns


def test_an_update_checks_patterns_against_the_service(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo, include=["getItem"])
    refused = _refused(plane, Invalid, plans.update, acme, plan.id, {"exclude": ["nothing_like_it"]})
    assert refused.field == "exclude"
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert (stored.include, stored.exclude) == (["getItem"], [])


def test_an_empty_pattern_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    assert _refused(plane, Invalid, plans.create, acme, echo, "main", {"include": [""]}).field == "include"


def test_null_patterns_clear_the_selection(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo, include=["getItem"], exclude=["deleteItem"])
    with plane.session() as session:
        plans.update(session, acme, plan.id, {"include": None, "exclude": None})
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert (stored.include, stored.exclude) == ([], [])


def test_cache_hints_are_normalised(plane: ControlPlane, acme: str, echo: str) -> None:
    hints = {"tools/list": {"ttl_ms": 60_000}, "resources/read": {"ttl_ms": 0, "scope": "public"}}
    plan = _plan(plane, acme, echo, cache=hints)
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert stored.cache == {
        "tools/list": {"ttl_ms": 60_000, "scope": "private"},
        "resources/read": {"ttl_ms": 0, "scope": "public"},
    }


INVALID_CACHE_HINTS: list[Any] = [
    {"tools/call": {"ttl_ms": 10}},
    {"tools/list": {"ttl_ms": -1}},
    {"tools/list": {"ttl_ms": "10"}},
    {"tools/list": {"ttl_ms": True}},
    {"tools/list": {}},
    {"tools/list": {"ttl_ms": 10, "scope": "shared"}},
    {"tools/list": 10},
    ["tools/list"],
    "tools/list",
]


def test_invalid_cache_hints_are_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    for cache in INVALID_CACHE_HINTS:
        refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {"cache": cache})
        assert refused.field == "cache", cache
    assert _count(plane, Plan) == 0


def test_backend_timeout_bounds(plane: ControlPlane, acme: str, echo: str) -> None:
    for timeout in (0, -5, 3_600_001, "100", None, 2.5, True):
        refused = _refused(plane, Invalid, plans.create, acme, echo, "refused", {"backend_timeout_ms": timeout})
        assert refused.field == "backend_timeout_ms", timeout
    assert _count(plane, Plan) == 0
    assert _plan(plane, acme, echo, "shortest", backend_timeout_ms=1).backend_timeout_ms == 1
    assert _plan(plane, acme, echo, "longest", backend_timeout_ms=3_600_000).backend_timeout_ms == 3_600_000


def test_an_invalid_tool_prefix_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    for prefix in ("has space", "x" * 33, "ünï"):
        refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {"tool_prefix": prefix})
        assert refused.field == "tool_prefix", prefix
    assert _plan(plane, acme, echo, tool_prefix="x" * 32).tool_prefix == "x" * 32


def test_plan_artifacts_must_be_attached_to_the_service(plane: ControlPlane, acme: str, echo: str) -> None:
    refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {"artifacts": ["overlay.yaml"]})
    assert refused.field == "artifacts"
    assert "overlay.yaml" in refused.detail


def test_an_api_key_plan_returns_its_key_once_and_keeps_its_hash(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        plan, key = plans.create(session, acme, echo, "main", {"inbound_mode": "api_key"})
    assert key is not None
    assert key.startswith("apimcp_key_")
    assert plan.inbound == {"mode": "api_key", "key_hash": sha256(key.encode()), "prefix": key[:15]}
    with plane.session() as session:
        raw = session.execute(text("SELECT * FROM plans")).mappings().one()
        everything = dump_all_rows(session)
    assert key not in str(dict(raw))
    assert key not in everything
    assert sha256(key.encode()) in str(raw["inbound"])

    with plane.session() as session:  # reading or updating something else returns no key
        _, again = plans.update(session, acme, plan.id, {"description": "x"})
    assert again is None
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
        assert stored is not None
        assert stored.inbound["key_hash"] == sha256(key.encode())


def test_asking_for_api_key_mode_again_renews_the_key(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        plan, first = plans.create(session, acme, echo, "main", {"inbound_mode": "api_key"})
    with plane.session() as session:
        _, second = plans.update(session, acme, plan.id, {"inbound_mode": "api_key"})
    assert first is not None and second is not None and first != second
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert stored.inbound["key_hash"] == sha256(second.encode())


def test_inbound_mode_none_drops_the_key(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        plan, _ = plans.create(session, acme, echo, "main", {"inbound_mode": "api_key"})
    with plane.session() as session:
        _, key = plans.update(session, acme, plan.id, {"inbound_mode": "none"})
    assert key is None
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
    assert stored is not None
    assert stored.inbound == {"mode": "none"}


def test_an_unknown_inbound_mode_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    refused = _refused(plane, Invalid, plans.create, acme, echo, "main", {"inbound_mode": "kerberos"})
    assert refused.field == "inbound_mode"


def test_a_plan_uses_a_secret_of_its_own_organization_only(plane: ControlPlane, acme: str, echo: str) -> None:
    globex = new_org(plane, "globex")
    with plane.session() as session:
        ours = secrets.create(session, plane.keys, acme, "token", "bearer", {}, {"token": "t1"})
        theirs = secrets.create(session, plane.keys, globex, "token", "bearer", {}, {"token": "t2"})
    refused = _refused(plane, NotFound, plans.create, acme, echo, "main", {"secret_id": theirs.id})
    assert theirs.id in refused.detail
    assert _count(plane, Plan) == 0
    plan = _plan(plane, acme, echo, secret_id=ours.id)
    assert plan.secret_id == ours.id
    _refused(plane, NotFound, plans.update, acme, plan.id, {"secret_id": theirs.id})
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
        assert stored is not None
        assert stored.secret_id == ours.id
        plans.update(session, acme, plan.id, {"secret_id": None})
    with plane.session() as session:
        stored = session.get(Plan, plan.id)
        assert stored is not None
        assert stored.secret_id is None


def test_duplicating_a_plan_copies_its_settings(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        secret = secrets.create(session, plane.keys, acme, "token", "bearer", {}, {"token": "t"})
        original, _ = plans.create(
            session,
            acme,
            echo,
            "main",
            {
                "description": "d",
                "backend_endpoint": "https://echo.example",
                "backend_timeout_ms": 1234,
                "include": ["get_*"],
                "exclude": ["getStatus"],
                "secret_id": secret.id,
                "cache": {"tools/list": {"ttl_ms": 5}},
                "tool_prefix": "e_",
                "output_schemas": False,
            },
        )
    with plane.session() as session:
        copy, key = plans.duplicate(session, acme, original.id, "copy")
    assert key is None
    assert copy.id != original.id
    assert copy.name == "copy"
    columns = ["description", "backend_endpoint", "backend_timeout_ms", "include", "exclude", "secret_id", "cache",
               "artifacts", "tool_prefix", "output_schemas", "inbound", "service_id"]  # fmt: skip
    assert {c: getattr(copy, c) for c in columns} == {c: getattr(original, c) for c in columns}
    assert _refused(plane, Conflict, plans.duplicate, acme, original.id, "copy").field == "name"


def test_duplicating_an_api_key_plan_issues_a_new_key(plane: ControlPlane, acme: str, echo: str) -> None:
    with plane.session() as session:
        original, first = plans.create(session, acme, echo, "main", {"inbound_mode": "api_key"})
    with plane.session() as session:
        copy, second = plans.duplicate(session, acme, original.id, "copy")
    assert first is not None and second is not None and first != second
    assert copy.inbound["mode"] == "api_key"
    assert copy.inbound["key_hash"] == sha256(second.encode()) != original.inbound["key_hash"]


def test_deleting_a_plan_deletes_its_expositions(plane: ControlPlane, acme: str, echo: str) -> None:
    doomed = _plan(plane, acme, echo, "doomed")
    kept = _plan(plane, acme, echo, "kept")
    with plane.session() as session:
        expositions.create(session, acme, doomed.id, name="doomed")
        expositions.create(session, acme, doomed.id)
        survivor = expositions.create(session, acme, kept.id)
    with plane.session() as session:
        plans.delete(session, acme, doomed.id)
    with plane.session() as session:
        assert [p.id for p in plans.listed(session, acme)] == [kept.id]
        assert [e.id for e in expositions.listed(session, acme)] == [survivor.id]


def test_another_organization_cannot_touch_a_plan(plane: ControlPlane, acme: str, echo: str) -> None:
    globex = new_org(plane, "globex")
    plan = _plan(plane, acme, echo)
    _refused(plane, NotFound, plans.update, globex, plan.id, {"description": "x"})
    _refused(plane, NotFound, plans.duplicate, globex, plan.id, "copy")
    _refused(plane, NotFound, plans.delete, globex, plan.id)
    with plane.session() as session:
        assert plans.listed(session, globex) == []
        assert [p.id for p in plans.listed(session, acme)] == [plan.id]
        stored = session.get(Plan, plan.id)
        assert stored is not None
        assert stored.description is None


def test_plans_are_listed_per_service(plane: ControlPlane, acme: str, echo: str) -> None:
    other = import_spec(plane, acme, spec()).service.id
    first = _plan(plane, acme, echo, "a")
    second = _plan(plane, acme, other, "b")
    with plane.session() as session:
        assert [p.id for p in plans.listed(session, acme, echo)] == [first.id]
        assert [p.id for p in plans.listed(session, acme, other)] == [second.id]
        assert {p.id for p in plans.listed(session, acme)} == {first.id, second.id}


# -- expositions ------------------------------------------------------------------------------


def _default_group(plane: ControlPlane, organization_id: str) -> GatewayGroup:
    with plane.session() as session:
        return next(g for g in groups.listed(session, organization_id) if g.name == "default")


def test_an_exposition_goes_to_the_default_group(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        exposition = expositions.create(session, acme, plan.id)
    assert exposition.group_id == _default_group(plane, acme).id
    assert (exposition.plan_id, exposition.name, exposition.organization_id) == (plan.id, None, acme)


def test_an_exposition_can_go_to_a_named_group(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        group = groups.create(session, acme, "eu", {"region": "eu"})
        exposition = expositions.create(session, acme, plan.id, group.id, "echo")
    with plane.session() as session:
        stored = session.get(Exposition, exposition.id)
    assert stored is not None
    assert (stored.group_id, stored.name) == (group.id, "echo")


def test_without_a_default_group_a_group_must_be_named(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        groups.delete(session, acme, _default_group(plane, acme).id)
    refused = _refused(plane, NotFound, expositions.create, acme, plan.id)
    assert refused.field == "group_id"


def test_unnamed_expositions_can_be_many(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        expositions.create(session, acme, plan.id)
        expositions.create(session, acme, plan.id)
    with plane.session() as session:
        assert [e.name for e in expositions.listed(session, acme)] == [None, None]


def test_an_exposition_name_is_unique_per_organization(plane: ControlPlane, acme: str, echo: str) -> None:
    globex = new_org(plane, "globex")
    globex_plan = _plan(plane, globex, import_echo(plane, globex).service.id)
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        expositions.create(session, acme, plan.id, name="echo")
    refused = _refused(plane, Conflict, expositions.create, acme, plan.id, None, "echo")
    assert (refused.status, refused.field) == (409, "name")
    with plane.session() as session:
        assert expositions.create(session, globex, globex_plan.id, name="echo").name == "echo"
    assert _count(plane, Exposition) == 2


def test_an_invalid_exposition_name_is_refused(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    for name in ("Echo", "with space", "-lead", ""):
        assert _refused(plane, Invalid, expositions.create, acme, plan.id, None, name).field == "name", name
    assert _count(plane, Exposition) == 0


def test_updating_an_exposition(plane: ControlPlane, acme: str, echo: str) -> None:
    first = _plan(plane, acme, echo, "first")
    second = _plan(plane, acme, echo, "second")
    with plane.session() as session:
        group = groups.create(session, acme, "eu", {"region": "eu"})
        exposition = expositions.create(session, acme, first.id, name="echo")
        other = expositions.create(session, acme, first.id, name="other")
    with plane.session() as session:
        expositions.update(session, acme, exposition.id, {"plan_id": second.id, "group_id": group.id})
    with plane.session() as session:
        stored = session.get(Exposition, exposition.id)
        assert stored is not None
        assert (stored.plan_id, stored.group_id, stored.name) == (second.id, group.id, "echo")
        expositions.update(session, acme, exposition.id, {"name": "echo"})  # its own name is no conflict
        expositions.update(session, acme, exposition.id, {"name": "renamed"})
    refused = _refused(plane, Conflict, expositions.update, acme, exposition.id, {"name": "other"})
    assert refused.field == "name"
    with plane.session() as session:
        expositions.update(session, acme, other.id, {"name": None})
        expositions.update(session, acme, exposition.id, {"name": "other"})  # free again
    with plane.session() as session:
        assert {e.id: e.name for e in expositions.listed(session, acme)} == {exposition.id: "other", other.id: None}


def test_an_exposition_cannot_use_another_organizations_plan_or_group(
    plane: ControlPlane, acme: str, echo: str
) -> None:
    globex = new_org(plane, "globex")
    acme_plan = _plan(plane, acme, echo)
    globex_plan = _plan(plane, globex, import_echo(plane, globex).service.id)
    globex_group = _default_group(plane, globex)
    refused = _refused(plane, NotFound, expositions.create, acme, globex_plan.id)
    assert refused.status == 404
    _refused(plane, NotFound, expositions.create, acme, acme_plan.id, globex_group.id)
    with plane.session() as session:
        exposition = expositions.create(session, acme, acme_plan.id)
    _refused(plane, NotFound, expositions.update, acme, exposition.id, {"plan_id": globex_plan.id})
    _refused(plane, NotFound, expositions.update, acme, exposition.id, {"group_id": globex_group.id})
    _refused(plane, NotFound, expositions.update, globex, exposition.id, {"name": "mine"})
    _refused(plane, NotFound, expositions.delete, globex, exposition.id)
    with plane.session() as session:
        stored = session.get(Exposition, exposition.id)
    assert stored is not None
    assert (stored.plan_id, stored.group_id, stored.name) == (acme_plan.id, _default_group(plane, acme).id, None)


def test_duplicating_an_exposition(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        group = groups.create(session, acme, "eu", {"region": "eu"})
        original = expositions.create(session, acme, plan.id, group.id, "echo")
    with plane.session() as session:
        copy = expositions.duplicate(session, acme, original.id, "echo-2")
        unnamed = expositions.duplicate(session, acme, original.id, None)
    assert copy.id != original.id
    assert (copy.plan_id, copy.group_id, copy.name) == (plan.id, group.id, "echo-2")
    assert (unnamed.plan_id, unnamed.group_id, unnamed.name) == (plan.id, group.id, None)
    assert _refused(plane, Conflict, expositions.duplicate, acme, original.id, "echo").field == "name"
    assert _count(plane, Exposition) == 3


def test_a_group_with_expositions_cannot_be_deleted(plane: ControlPlane, acme: str, echo: str) -> None:
    plan = _plan(plane, acme, echo)
    with plane.session() as session:
        group = groups.create(session, acme, "eu", {})
        exposition = expositions.create(session, acme, plan.id, group.id)
    _refused(plane, Conflict, groups.delete, acme, group.id)
    with plane.session() as session:
        expositions.delete(session, acme, exposition.id)
    with plane.session() as session:
        groups.delete(session, acme, group.id)
    with plane.session() as session:
        assert [g.name for g in groups.listed(session, acme)] == ["default"]
