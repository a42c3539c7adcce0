"""The store's sessions and integrity rules, organizations, and the first token (on SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from apimcp.control import setup
from apimcp.control.domain import groups, orgs, tokens
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import ApiToken, GatewayGroup, Organization, Plan
from apimcp.control.plane import ControlPlane
from tests.control.factories import new_org


def _count(plane: ControlPlane, model: type) -> int:
    with plane.session() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


# -- sessions and integrity -------------------------------------------------------------------


def test_a_session_commits_when_its_block_ends(plane: ControlPlane) -> None:
    with plane.session() as session:
        organization_id = orgs.create(session, "acme").id
    with plane.session() as session:
        found = session.get(Organization, organization_id)
        assert found is not None
        assert found.name == "acme"


def _create_then_fail(plane: ControlPlane) -> None:
    with plane.session() as session:
        orgs.create(session, "acme")
        raise RuntimeError("boom")


def test_a_session_rolls_back_when_its_block_raises(plane: ControlPlane) -> None:
    with pytest.raises(RuntimeError, match="boom"):
        _create_then_fail(plane)
    assert _count(plane, Organization) == 0
    assert _count(plane, GatewayGroup) == 0


def test_foreign_keys_are_enforced(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with pytest.raises(IntegrityError), plane.session() as session:
        session.add(
            Plan(
                organization_id=organization_id,
                service_id="nosuchservice",
                name="p",
                include=[],
                exclude=[],
                inbound={},
                cache={},
                artifacts=[],
            )
        )
    assert _count(plane, Plan) == 0


def test_deleting_an_organization_cascades_to_its_objects(plane: ControlPlane) -> None:
    kept = new_org(plane, "kept")
    gone = new_org(plane, "gone")
    with plane.session() as session:
        tokens.issue(session, kept, "k")
        tokens.issue(session, gone, "g")
    with plane.session() as session:
        session.execute(text("DELETE FROM organizations WHERE id = :id"), {"id": gone})
    with plane.session() as session:
        assert [t.organization_id for t in session.scalars(select(ApiToken))] == [kept]
        assert [g.organization_id for g in session.scalars(select(GatewayGroup))] == [kept]


# -- organizations ----------------------------------------------------------------------------


def test_create_an_organization_with_its_default_group(plane: ControlPlane) -> None:
    with plane.session() as session:
        organization = orgs.create(session, "acme-2")
    assert organization.name == "acme-2"
    assert len(organization.id) == 13
    with plane.session() as session:
        assert orgs.by_name(session, "acme-2").id == organization.id
        listed = groups.listed(session, organization.id)
    assert [(g.name, g.labels) for g in listed] == [("default", {})]


def test_an_organization_name_is_unique(plane: ControlPlane) -> None:
    new_org(plane, "acme")
    with pytest.raises(Conflict) as caught, plane.session() as session:
        orgs.create(session, "acme")
    assert (caught.value.status, caught.value.field) == (409, "name")
    assert "acme" in caught.value.detail
    assert _count(plane, Organization) == 1


def test_an_invalid_organization_name_is_refused(plane: ControlPlane) -> None:
    for name in ("", "Acme", "ac_me", "-acme", "ac me", "a" * 64, "acme\n"):  # a `$` once let the last through
        with pytest.raises(Invalid) as caught, plane.session() as session:
            orgs.create(session, name)
        assert (caught.value.status, caught.value.field) == (422, "name"), name
    assert _count(plane, Organization) == 0


def test_the_longest_organization_name_is_accepted(plane: ControlPlane) -> None:
    assert new_org(plane, "a" * 63)
    with plane.session() as session:
        assert orgs.by_name(session, "a" * 63).name == "a" * 63


def test_an_unknown_organization_is_not_found(plane: ControlPlane) -> None:
    with pytest.raises(NotFound) as caught, plane.session() as session:
        orgs.by_name(session, "ghost")
    assert caught.value.status == 404


# -- bootstrap --------------------------------------------------------------------------------


def test_bootstrap_creates_the_default_organization_and_a_token_once(plane: ControlPlane) -> None:
    with plane.session() as session:
        created = orgs.bootstrap(session)
    assert created is not None
    organization, value = created
    assert organization.name == "default"
    with plane.session() as session:
        caller = tokens.authenticate(session, value)
    assert (caller.organization_id, caller.organization, caller.kind) == (organization.id, "default", "admin")

    with plane.session() as session:
        assert orgs.bootstrap(session) is None
    assert _count(plane, Organization) == 1
    assert _count(plane, ApiToken) == 1


def test_bootstrap_reuses_an_existing_default_organization(plane: ControlPlane) -> None:
    existing = new_org(plane, "default")
    with plane.session() as session:
        created = orgs.bootstrap(session)
    assert created is not None
    assert created[0].id == existing
    assert _count(plane, Organization) == 1


def test_bootstrap_does_nothing_when_any_token_exists(plane: ControlPlane) -> None:
    other = new_org(plane, "acme")
    with plane.session() as session:
        tokens.issue(session, other, "first")
    with plane.session() as session:
        assert orgs.bootstrap(session) is None
    with plane.session() as session:
        assert session.scalar(select(Organization).where(Organization.name == "default")) is None


def test_setup_bootstrap_writes_the_token_to_a_private_file(plane: ControlPlane, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = setup.bootstrap(plane, data_dir)
    assert result is not None
    token, path = result
    assert path == data_dir / setup.BOOTSTRAP_TOKEN_FILE
    assert path.read_text() == token + "\n"
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with plane.session() as session:
        assert tokens.authenticate(session, token).organization == "default"
    assert setup.bootstrap(plane, data_dir) is None
    assert path.read_text() == token + "\n"
