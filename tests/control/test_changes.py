"""Revisions: every change gateways must learn of appends one, per organization (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.domain import expositions, groups, plans, secrets, services
from apimcp.control.models import Change
from apimcp.control.plane import ControlPlane
from tests.control.factories import echo_content, new_org, prompts, spec


def _changes(plane: ControlPlane) -> list[tuple[int, str, str, str]]:
    with plane.session() as session:
        return [
            (c.revision, c.organization_id, c.kind, c.object_id)
            for c in session.scalars(select(Change).order_by(Change.revision))
        ]


def test_an_empty_plane_is_at_revision_zero(plane: ControlPlane) -> None:
    with plane.session() as session:
        assert changes.latest(session) == 0
        assert changes.latest(session, "nosuchorg") == 0


def test_every_mutation_that_gateways_see_records_a_revision(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    created: dict[str, Any] = {}

    def step(kind: str, object_id: Callable[[], str], mutation: Callable[[Session], Any]) -> None:
        with plane.session() as session:
            before = changes.latest(session, organization_id)
            created[kind] = mutation(session)
        recorded = _changes(plane)
        assert recorded[-1][0] > before, kind
        assert recorded[-1][1:] == (organization_id, kind.split(":", maxsplit=1)[0], object_id()), kind

    keys = plane.keys
    org = organization_id
    step("service:import", lambda: created["service:import"].service.id,
         lambda s: services.import_service(s, org, content=echo_content()))  # fmt: skip
    service_id = created["service:import"].service.id
    step("service:reimport", lambda: service_id, lambda s: services.import_service(s, org, content=echo_content()))
    step("artifact:attach", lambda: created["artifact:attach"].id,
         lambda s: services.attach(s, org, service_id, "extra.json", prompts()))  # fmt: skip
    step("artifact:detach", lambda: created["artifact:attach"].id,
         lambda s: services.delete_artifact(s, org, created["artifact:attach"].id))  # fmt: skip

    with plane.session() as session:
        secret = secrets.create(session, keys, org, "token", "bearer", {}, {"token": "t"})
        plan, _ = plans.create(session, org, service_id, "main", {"secret_id": secret.id})
        group = groups.create(session, org, "eu", {"region": "eu"})
    step("plan:update", lambda: plan.id, lambda s: plans.update(s, org, plan.id, {"description": "x"}))
    step("secret:rotate", lambda: secret.id, lambda s: secrets.rotate(s, keys, org, secret.id, {"token": "u"}))
    step("exposition:create", lambda: created["exposition:create"].id,
         lambda s: expositions.create(s, org, plan.id, name="echo"))  # fmt: skip
    exposition_id = created["exposition:create"].id
    step("exposition:update", lambda: exposition_id,
         lambda s: expositions.update(s, org, exposition_id, {"group_id": group.id}))  # fmt: skip
    step("gateway-group:update", lambda: group.id, lambda s: groups.update(s, org, group.id, {"region": "us"}))
    step("exposition:delete", lambda: exposition_id, lambda s: expositions.delete(s, org, exposition_id))
    step("plan:delete", lambda: plan.id, lambda s: plans.delete(s, org, plan.id))
    step("service:delete", lambda: service_id, lambda s: services.delete(s, org, service_id))

    revisions = [revision for revision, *_ in _changes(plane)]
    assert revisions == sorted(set(revisions))
    assert len(revisions) >= 12


def test_a_failed_mutation_records_no_revision(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        services.import_service(session, organization_id, content=spec())
    before = _changes(plane)

    def abandoned_reimport() -> None:
        with plane.session() as session:
            services.import_service(session, organization_id, content=spec(operations=["a", "b"]))
            raise RuntimeError("abandoned")

    with pytest.raises(RuntimeError, match="abandoned"):
        abandoned_reimport()
    assert _changes(plane) == before
    with plane.session() as session:
        [service] = services.listed(session, organization_id)
    assert service.operation_count == 1


def test_latest_is_per_organization(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    with plane.session() as session:
        services.import_service(session, acme, content=spec())
    with plane.session() as session:
        acme_revision = changes.latest(session, acme)
        assert acme_revision > 0
        assert changes.latest(session, globex) == 0
        services.import_service(session, globex, content=spec())
    with plane.session() as session:
        globex_revision = changes.latest(session, globex)
        assert globex_revision > acme_revision
        assert changes.latest(session, acme) == acme_revision
        assert changes.latest(session) == globex_revision
        services.import_service(session, acme, content=spec(version="2"))
    with plane.session() as session:
        assert changes.latest(session, acme) > globex_revision
        assert changes.latest(session, globex) == globex_revision
        assert changes.latest(session) == changes.latest(session, acme)


def test_a_commit_wakes_a_waiting_gateway(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")

    async def scenario() -> None:
        waiter = asyncio.create_task(plane.signal.wait(60))
        await asyncio.sleep(0)  # let the waiter register
        assert not waiter.done()
        with plane.session() as session:
            changes.record(session, organization_id, "service", "x")
        await asyncio.wait_for(waiter, 10)  # well before its own 60 s: woken by the commit

    asyncio.run(scenario())
    with plane.session() as session:
        assert changes.latest(session, organization_id) > 0
