"""Services: import, re-import in place, artifacts, deletion (on SQLite and PostgreSQL)."""

from __future__ import annotations

import unittest.mock

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from apimcp.catalog.codec import decode_service
from apimcp.control import changes
from apimcp.control.domain import expositions, plans, services
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Artifact, Exposition, Plan, Service
from apimcp.control.plane import ControlPlane
from apimcp.safety.fetch import Fetcher, FetchLimits
from tests.control.factories import echo_content, import_echo, import_spec, new_org, prompts, sha256, spec


def _count(plane: ControlPlane, model: type) -> int:
    with plane.session() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def _invalid_import(plane: ControlPlane, organization_id: str, **kwargs: object) -> Invalid:
    with pytest.raises(Invalid) as caught, plane.session() as session:
        services.import_service(session, organization_id, **kwargs)  # type: ignore[arg-type]
    assert caught.value.status == 422
    return caught.value


# -- import -----------------------------------------------------------------------------------


def test_import_records_the_service_and_its_main_artifact(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    imported = import_echo(plane, organization_id)
    service = imported.service
    assert imported.created is True
    assert (service.name, service.version, service.kind) == ("Echo API", "2.1", "openapi")
    assert service.description is not None
    assert service.description.startswith("Every operation answers")
    assert service.operation_count == 16 == len(imported.catalog.operations)
    assert service.compiled_hash == sha256(service.compiled)
    assert [op.operation_id for op in decode_service(service.compiled).operations][:3] == [
        "getItem",
        "replaceItem",
        "deleteItem",
    ]
    with plane.session() as session:
        stored = session.get(Service, service.id)
        assert stored is not None
        assert bytes(stored.compiled) == service.compiled
        found = services.artifacts(session, organization_id, service.id)
    assert len(found) == 1
    main = found[0]
    assert main.role == "main"
    assert main.name == "Echo API-2.1-description"
    assert bytes(main.content) == echo_content()
    assert main.content_hash == sha256(echo_content())
    assert main.source == "echo_api.yaml"


def test_name_and_version_can_be_given(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        imported = services.import_service(
            session,
            organization_id,
            content=spec(),
            filename="pets.json",
            options=services.ImportOptions(name="pets", version="7"),
        )
    assert (imported.service.name, imported.service.version) == ("pets", "7")


def test_the_same_name_and_version_in_two_organizations_are_two_services(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    first = import_echo(plane, acme)
    second = import_echo(plane, globex)
    assert first.created and second.created
    assert first.service.id != second.service.id
    with plane.session() as session:
        assert [s.id for s in services.listed(session, acme)] == [first.service.id]
        assert [s.id for s in services.listed(session, globex)] == [second.service.id]


def test_reimporting_the_same_name_and_version_updates_in_place(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    first = import_spec(plane, organization_id, spec(operations=["listPets"]), "v1.json")
    assert first.created
    assert first.service.operation_count == 1
    changed = spec(operations=["listPets", "listOwners", "listVets"])
    second = import_spec(plane, organization_id, changed, "v2.json")
    assert second.created is False
    assert second.service.id == first.service.id
    assert second.service.operation_count == 3
    assert second.service.compiled_hash != first.service.compiled_hash
    assert second.service.compiled_hash == sha256(second.service.compiled)
    with plane.session() as session:
        assert [s.id for s in services.listed(session, organization_id)] == [first.service.id]
        stored = session.get(Service, first.service.id)
        assert stored is not None
        assert stored.operation_count == 3
        artifacts = services.artifacts(session, organization_id, first.service.id)
    assert [(a.role, bytes(a.content), a.content_hash, a.source) for a in artifacts] == [
        ("main", changed, sha256(changed), "v2.json")
    ]


def test_another_version_is_another_service(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    one = import_spec(plane, organization_id, spec(version="1.0"))
    two = import_spec(plane, organization_id, spec(version="2.0"))
    assert two.created
    assert one.service.id != two.service.id
    with plane.session() as session:
        assert [s.version for s in services.listed(session, organization_id)] == ["1.0", "2.0"]


def test_the_database_refuses_a_second_service_of_the_same_name_and_version(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    existing = import_spec(plane, organization_id, spec()).service
    with pytest.raises(IntegrityError), plane.session() as session:
        session.add(
            Service(
                organization_id=organization_id,
                name=existing.name,
                version=existing.version,
                compiled=b"{}",
                compiled_hash=sha256(b"{}"),
                operation_count=0,
            )
        )
    assert _count(plane, Service) == 1


def test_import_needs_exactly_one_source(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    assert _invalid_import(plane, organization_id).field == "file"
    both = _invalid_import(plane, organization_id, content=spec(), url="https://example.com/openapi.json")
    assert both.field == "file"


def test_only_http_urls_are_imported(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    refused = _invalid_import(plane, organization_id, url="file:///etc/passwd")
    assert refused.field == "url"
    assert _count(plane, Service) == 0


@pytest.mark.parametrize(
    "content",
    [b"openapi: [unclosed", b'{"openapi": "2.5", "info": {"title": "x", "version": "1"}, "paths": {}}', b"- a list"],
)
def test_a_document_that_is_not_openapi_is_refused(plane: ControlPlane, content: bytes) -> None:
    organization_id = new_org(plane, "acme")
    refused = _invalid_import(plane, organization_id, content=content, filename="bad.yaml")
    assert refused.field == "file"
    assert _count(plane, Service) == 0


def _chain(kind: str, length: int = 600) -> bytes:
    if kind == "grpc":  # message M0 holds an M1, which holds an M2...
        head = 'syntax = "proto3";\npackage p;\nservice S { rpc Call(M0) returns (M0); }\n'
        return (head + "".join(f"message M{i} {{ M{i + 1} next = 1; }}\n" for i in range(length))
                + f"message M{length} {{ string x = 1; }}\n").encode()  # fmt: skip
    head = "type Query { q(arg: I0): Int }\n"
    return (head + "".join(f"input I{i} {{ next: I{i + 1} }}\n" for i in range(length))
            + f"input I{length} {{ x: Int }}\n").encode()  # fmt: skip


@pytest.mark.parametrize("kind", ["grpc", "graphql"])
def test_a_description_chaining_its_types_deeper_than_python_recurses_is_refused(
    plane: ControlPlane, kind: str
) -> None:
    """The finding: a chain of a few hundred types (9 KB) made the importer recurse past Python's limit, and the
    upload was answered 500."""
    options = services.ImportOptions(kind=kind, name="chain", version="1")  # type: ignore[arg-type]
    refused = _invalid_import(plane, new_org(plane, f"chain-{kind}"), content=_chain(kind), options=options)
    assert "nests or chains its definitions too deeply to import" in str(refused)
    assert refused.field == "file"


def test_a_value_of_a_kind_no_check_expected_is_a_clear_refusal(
    plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    """The finding: a value of another kind where the importer expected a string (a Swagger 2.0 `flow` as an
    object, say) raised TypeError, and the upload was answered 500; now it is refused naming the description."""
    bad = (
        b'{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://[::1/v1"}], '
        b'"paths": {}}'
    )
    refused = _invalid_import(plane, new_org(plane, "odd"), content=bad, filename="odd.json")
    assert (
        str(refused) == "odd.json at /servers/0/url: the server URL 'https://[::1/v1' is not a URL (Invalid IPv6 URL)"
    )
    with unittest.mock.patch.object(services, "import_openapi", side_effect=TypeError("unhashable type: 'dict'")):
        refused = _invalid_import(plane, new_org(plane, "odder"), content=spec(), filename="odd.yaml")
    assert str(refused) == "odd.yaml: it holds a value of a kind this importer cannot read (TypeError)"
    assert "failed on a value it did not expect" in caplog.text


def test_a_file_larger_than_the_limit_is_refused(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    content = spec()
    smaller = Fetcher(limits=FetchLimits(max_bytes=len(content) - 1))
    refused = _invalid_import(plane, organization_id, content=content, fetcher=smaller)
    assert refused.field == "file"
    assert str(len(content) - 1) in refused.detail
    with plane.session() as session:
        accepted = services.import_service(
            session, organization_id, content=content, fetcher=Fetcher(limits=FetchLimits(max_bytes=len(content)))
        )
    assert accepted.created
    assert accepted.service.operation_count == 1


# -- artifacts --------------------------------------------------------------------------------


def test_attaching_an_artifact_records_its_hash(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    content = prompts()
    with plane.session() as session:
        artifact = services.attach(session, organization_id, service_id, "overlay.yaml", content)
    assert (artifact.kind, artifact.capabilities) == ("Prompts", ["hello"])
    assert (artifact.role, artifact.name, artifact.content_hash) == ("attached", "overlay.yaml", sha256(content))
    with plane.session() as session:
        listed = services.artifacts(session, organization_id, service_id)
    assert [(a.role, a.name) for a in listed] == [("main", "Echo API-2.1-description"), ("attached", "overlay.yaml")]


def test_attaching_the_same_name_replaces_the_artifact(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    with plane.session() as session:
        first = services.attach(session, organization_id, service_id, "extra.json", prompts())
    with plane.session() as session:
        second = services.attach(session, organization_id, service_id, "extra.json", prompts("Echo API", "2.1", "bye"))
    assert second.id == first.id
    with plane.session() as session:
        attached = [a for a in services.artifacts(session, organization_id, service_id) if a.role == "attached"]
    changed = prompts("Echo API", "2.1", "bye")
    assert [(a.id, bytes(a.content), a.content_hash, a.capabilities) for a in attached] == [
        (first.id, changed, sha256(changed), ["bye"])
    ]


def test_an_artifact_cannot_take_the_main_description_name(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    with pytest.raises(Conflict) as caught, plane.session() as session:
        services.attach(session, organization_id, service_id, "Echo API-2.1-description", b"{}")
    assert caught.value.field == "name"
    with plane.session() as session:
        main = services.artifacts(session, organization_id, service_id)[0]
    assert bytes(main.content) == echo_content()


@pytest.mark.parametrize("content", [b"- not\n- a mapping\n", b"{unbalanced: [", b"just text"])
def test_an_artifact_must_be_a_document(plane: ControlPlane, content: bytes) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    with pytest.raises(Invalid) as caught, plane.session() as session:
        services.attach(session, organization_id, service_id, "extra.yaml", content)
    assert caught.value.field == "file"
    assert _count(plane, Artifact) == 1


def test_an_attached_artifact_can_be_detached_but_not_the_main_one(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    service_id = import_echo(plane, organization_id).service.id
    with plane.session() as session:
        attached = services.attach(session, organization_id, service_id, "extra.json", prompts())
        main_id = services.artifacts(session, organization_id, service_id)[0].id
    with pytest.raises(Conflict), plane.session() as session:
        services.delete_artifact(session, organization_id, main_id)
    with plane.session() as session:
        services.delete_artifact(session, organization_id, attached.id)
    with plane.session() as session:
        assert [a.id for a in services.artifacts(session, organization_id, service_id)] == [main_id]


def test_artifacts_of_another_organization_are_not_found(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    service_id = import_echo(plane, acme).service.id
    with plane.session() as session:
        attached = services.attach(session, acme, service_id, "extra.json", prompts())
    with pytest.raises(NotFound), plane.session() as session:
        services.artifacts(session, globex, service_id)
    with pytest.raises(NotFound), plane.session() as session:
        services.attach(session, globex, service_id, "other.json", prompts())
    with pytest.raises(NotFound), plane.session() as session:
        services.delete_artifact(session, globex, attached.id)
    assert _count(plane, Artifact) == 2


# -- deletion ---------------------------------------------------------------------------------


def test_deleting_a_service_deletes_its_artifacts_plans_and_expositions(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    doomed = import_echo(plane, organization_id).service.id
    kept = import_spec(plane, organization_id, spec()).service.id
    with plane.session() as session:
        services.attach(session, organization_id, doomed, "extra.json", prompts())
        first, _ = plans.create(session, organization_id, doomed, "one", {})
        second, _ = plans.create(session, organization_id, doomed, "two", {})
        kept_plan, _ = plans.create(session, organization_id, kept, "kept", {})
        expositions.create(session, organization_id, first.id, name="one")
        expositions.create(session, organization_id, second.id)
        kept_exposition = expositions.create(session, organization_id, kept_plan.id, name="kept")
    with plane.session() as session:
        before = changes.latest(session)
        services.delete(session, organization_id, doomed)
    with plane.session() as session:
        assert session.get(Service, doomed) is None
        assert list(session.scalars(select(Plan.id))) == [kept_plan.id]
        assert list(session.scalars(select(Exposition.id))) == [kept_exposition.id]
        assert {a.service_id for a in session.scalars(select(Artifact))} == {kept}
        assert changes.latest(session) > before


def test_another_organization_cannot_delete_a_service(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    service_id = import_echo(plane, acme).service.id
    with pytest.raises(NotFound), plane.session() as session:
        services.delete(session, globex, service_id)
    assert _count(plane, Service) == 1
