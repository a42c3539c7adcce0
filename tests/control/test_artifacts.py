"""Artifact documents in the control plane: checked when attached, listed with what they declare, detached with
the plans they leave (on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from sqlalchemy import func, select, text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from apimcp.control import changes
from apimcp.control.domain import plans, services
from apimcp.control.errors import Invalid
from apimcp.control.models import Artifact, Change, Plan
from apimcp.control.plane import ControlPlane
from apimcp.control.store import Store
from tests.control.api_harness import Api, created, import_echo, ok, problem
from tests.control.factories import import_echo as import_echo_here
from tests.control.factories import new_org, prompts
from tests.support.live_server import live_server

FILES = Path(__file__).resolve().parents[1] / "artifacts" / "files"


def _file(name: str) -> bytes:
    return (FILES / name).read_bytes()


def _edited(name: str, **top: Any) -> bytes:
    document = yaml.safe_load(_file(name)) | top
    return orjson.dumps(document)


def _count(plane: ControlPlane, *where: Any) -> int:
    with plane.session() as session:
        return session.scalar(select(func.count()).select_from(Artifact).where(*where)) or 0


# --- the domain ----------------------------------------------------------------------------------------


@pytest.fixture
def echo(plane: ControlPlane) -> tuple[str, str]:
    """An organization and its Echo API 2.1 service (the example files' service)."""
    organization_id = new_org(plane, "acme")
    return organization_id, import_echo_here(plane, organization_id).service.id


def _attach(
    plane: ControlPlane, echo: tuple[str, str], name: str, content: bytes, source: str | None = None
) -> Artifact:
    with plane.session() as session:
        return services.attach(session, *echo, name, content, source=source)


def test_each_kind_is_stored_with_its_document_and_capabilities(plane: ControlPlane, echo: tuple[str, str]) -> None:
    for name in ("custom-tools.yaml", "prompts.yaml", "resources.yaml", "filters.yaml"):
        _attach(plane, echo, name, _file(name))
    with plane.session() as session:
        listed = [a for a in services.artifacts(session, *echo) if a.role == "attached"]
    assert [(a.name, a.kind) for a in listed] == [
        ("custom-tools.yaml", "CustomTools"),
        ("prompts.yaml", "Prompts"),
        ("resources.yaml", "Resources"),
        ("filters.yaml", "ToolsOutputFilters"),
    ]  # in attachment order
    assert listed[0].capabilities == ["show_item", "rename_twice"]
    assert listed[3].capabilities == ["get_item", "show_item"]
    for artifact in listed:
        assert artifact.document == yaml.safe_load(_file(artifact.name))


def test_a_refused_file_stores_nothing_and_says_where(plane: ControlPlane, echo: tuple[str, str]) -> None:
    organization_id, _ = echo
    with plane.session() as session:
        before = changes.latest(session, organization_id)
    bad = _edited("prompts.yaml", prompts={"p": {"result": "${who}"}})
    for source, field in ((None, "file"), ("https://files.example/p.yaml", "url")):
        with pytest.raises(Invalid) as caught:
            _attach(plane, echo, "prompts.yaml", bad, source)
        assert (caught.value.field, caught.value.detail) == (
            field,
            "/prompts/p/result: ${who} names no argument: it declares no arguments",
        )
    assert _count(plane, Artifact.role == "attached") == 0
    with plane.session() as session:
        assert changes.latest(session, organization_id) == before


def test_filters_may_name_custom_tools_of_the_service_s_other_files(plane: ControlPlane, echo: tuple[str, str]) -> None:
    with pytest.raises(Invalid, match=r"^/filters/show_item: 'show_item' is no tool"):
        _attach(plane, echo, "filters.yaml", _file("filters.yaml"))
    _attach(plane, echo, "custom-tools.yaml", _file("custom-tools.yaml"))
    assert _attach(plane, echo, "filters.yaml", _file("filters.yaml")).kind == "ToolsOutputFilters"


def test_a_file_for_another_service_is_refused(plane: ControlPlane, echo: tuple[str, str]) -> None:
    with pytest.raises(Invalid) as caught:
        _attach(plane, echo, "p.yaml", prompts("Echo API", "3"))
    assert caught.value.detail.startswith("/service: the file is for Echo API 3, not Echo API 2.1")


def test_attaching_a_name_again_keeps_its_id_and_place(plane: ControlPlane, echo: tuple[str, str]) -> None:
    first = _attach(plane, echo, "a.yaml", prompts("Echo API", "2.1", "one"))
    _attach(plane, echo, "b.yaml", prompts("Echo API", "2.1", "two"))
    again = _attach(plane, echo, "a.yaml", _file("custom-tools.yaml"))
    assert again.id == first.id
    with plane.session() as session:
        listed = [a for a in services.artifacts(session, *echo) if a.role == "attached"]
    replaced = listed[0]
    assert (replaced.id, replaced.name, replaced.kind) == (first.id, "a.yaml", "CustomTools")
    assert replaced.capabilities == ["show_item", "rename_twice"]
    assert [a.name for a in listed] == ["a.yaml", "b.yaml"]


def test_detaching_reports_and_updates_the_plans_that_selected_it(plane: ControlPlane, echo: tuple[str, str]) -> None:
    organization_id, service_id = echo
    doomed = _attach(plane, echo, "doomed.yaml", prompts())
    _attach(plane, echo, "kept.yaml", prompts("Echo API", "2.1", "other"))
    with plane.session() as session:
        both, _ = plans.create(
            session, organization_id, service_id, "both", {"artifacts": ["doomed.yaml", "kept.yaml"]}
        )
        only, _ = plans.create(session, organization_id, service_id, "only", {"artifacts": ["doomed.yaml"]})
        plans.create(session, organization_id, service_id, "all", {})
        before = changes.latest(session, organization_id)
    with plane.session() as session:
        report = services.delete_artifact(session, organization_id, doomed.id)
    assert (report.artifact_id, report.artifact_name) == (doomed.id, "doomed.yaml")
    assert [(p.id, p.name, p.falls_back_to_all) for p in report.impacted_plans] == [
        (both.id, "both", False),
        (only.id, "only", True),
    ]
    with plane.session() as session:
        assert session.get(Plan, both.id).artifacts == ["kept.yaml"]  # type: ignore[union-attr]
        assert session.get(Plan, only.id).artifacts == []  # type: ignore[union-attr]
        recorded = session.execute(
            select(Change.kind, Change.object_id).where(Change.revision > before).order_by(Change.revision)
        ).all()
    assert [tuple(row) for row in recorded] == [("plan", both.id), ("plan", only.id), ("artifact", doomed.id)]
    assert _count(plane, Artifact.id == doomed.id) == 0


def test_plans_select_attached_documents_only(plane: ControlPlane, echo: tuple[str, str]) -> None:
    organization_id, service_id = echo
    legacy = _attach(plane, echo, "legacy.yaml", prompts())
    with plane.session() as session:  # as migration 0005 leaves a file it could not read
        session.get(Artifact, legacy.id).kind = None  # type: ignore[union-attr]
    for selection, phrase in (
        (["Echo API-2.1-description"], "has no attached artifact 'Echo API-2.1-description'"),
        (["legacy.yaml"], "'legacy.yaml' was attached before artifacts were checked"),
    ):
        with pytest.raises(Invalid, match=phrase), plane.session() as session:
            plans.create(session, organization_id, service_id, "p", {"artifacts": selection})


# --- the REST API ----------------------------------------------------------------------------------------


@pytest.fixture
def files() -> Iterator[str]:
    """A web server publishing the example files."""

    async def serve(request: Request) -> Response:
        return Response(_file(request.path_params["name"]), media_type="application/yaml")

    with live_server(Starlette(routes=[Route("/{name}", serve)])) as base:
        yield base.replace("localhost", "127.0.0.1")


def test_attaching_by_upload_and_url_through_the_api(api: Api, files: str) -> None:
    acme = api.org("acme")
    service = import_echo(acme.user, "Echo API", "2.1")
    base = f"/services/{service['id']}/artifacts"
    uploaded = created(acme.user.post(base, files={"file": ("prompts.yaml", _file("prompts.yaml"))}))
    assert (uploaded["kind"], uploaded["capabilities"]) == ("Prompts", ["summarize-item", "house-rules"])
    refused = problem(acme.user.post(f"{base}/from-url", json={"url": f"{files}/filters.yaml"}), 422, "url")
    assert refused["detail"].startswith("/filters/show_item: 'show_item' is no tool of the service")
    url = f"{files}/custom-tools.yaml"
    by_url = created(acme.user.post(f"{base}/from-url", json={"url": url}))
    assert (by_url["name"], by_url["kind"], by_url["source"]) == ("custom-tools.yaml", "CustomTools", url)
    broken = problem(acme.user.post(base, files={"file": ("x.yaml", b"kind: Overlay\n")}), 422, "file")
    assert broken["detail"].startswith('/kind: the kind is "Overlay", which is not a kind')
    listed = ok(acme.user.get(base))
    assert [(a["role"], a["kind"]) for a in listed] == [
        ("main", None),
        ("attached", "Prompts"),
        ("attached", "CustomTools"),
    ]


def test_detaching_through_the_api_answers_the_impact(api: Api) -> None:
    acme = api.org("acme")
    service = import_echo(acme.user, "Echo API", "2.1")
    artifact = created(acme.user.post(f"/services/{service['id']}/artifacts", files={"file": ("p.yaml", prompts())}))
    plan = created(
        acme.user.post("/plans", json={"service_id": service["id"], "name": "main", "artifacts": ["p.yaml"]})
    )
    report = ok(acme.user.delete(f"/artifacts/{artifact['id']}"))
    assert report == {
        "artifact_id": artifact["id"],
        "artifact_name": "p.yaml",
        "impacted_plans": [{"id": plan["id"], "name": "main", "falls_back_to_all": True}],
    }
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["artifacts"] == []
    problem(acme.user.delete(f"/artifacts/{artifact['id']}"), 404)


def test_the_schemas_are_served(api: Api) -> None:
    acme = api.org("acme")
    response = acme.user.get("/artifact-schemas/CustomTools")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/schema+json"
    assert response.json()["properties"]["kind"] == {"const": "CustomTools"}
    assert "Prompts" in problem(acme.user.get("/artifact-schemas/Overlay"), 404)["detail"]


# --- migration 0005 ----------------------------------------------------------------------------------------


def test_migration_0005_reads_the_files_attached_before(database_url: str) -> None:
    store = Store(database_url)
    try:
        store.migrate_to("0004")
        rows = {
            "valid": prompts("Echo API", "2.1", "hello"),
            "other-svc": prompts("Weather", "1"),
            "not-an-art": b"overlay: 1.0.0\n",
        }
        with store.engine.begin() as connection:
            now = {"now": "2026-01-01 00:00:00"}
            connection.execute(text("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'acme', :now)"), now)
            connection.execute(
                text(
                    "INSERT INTO services (id, organization_id, name, version, kind, compiled, compiled_hash, "
                    "operation_count, created_at, updated_at) VALUES ('s', 'o', 'Echo API', '2.1', 'openapi', :c, "
                    "'h', 0, :now, :now)"
                ),
                {"c": b"{}", **now},
            )
            for role, name, content in [
                ("main", "main", b"openapi: 3.0.3\n"),
                *(("attached", n, c) for n, c in rows.items()),
            ]:
                connection.execute(
                    text(
                        "INSERT INTO artifacts (id, organization_id, service_id, name, role, content, content_hash, "
                        "created_at) VALUES (:id, 'o', 's', :id, :role, :content, 'h', :now)"
                    ),
                    {"id": name, "role": role, "content": content, **now},
                )
        store.migrate_to("head")
        with store.session() as session:
            found = {a.name: (a.kind, a.capabilities, a.document) for a in session.scalars(select(Artifact))}
        assert found["valid"] == ("Prompts", ["hello"], orjson.loads(rows["valid"]))
        assert found["other-svc"] == found["not-an-art"] == found["main"] == (None, [], None)
        store.migrate_to("0004", down=True)
        with store.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM artifacts")).scalar() == 4
    finally:
        store.dispose()
