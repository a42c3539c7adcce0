"""Gateway groups and their label matching, and gateways registering (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apimcp.control import changes
from apimcp.control.domain import gateways, groups
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Gateway, utcnow
from apimcp.control.plane import ControlPlane
from tests.control.factories import new_org


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# -- groups -----------------------------------------------------------------------------------


def test_a_gateway_serves_the_groups_whose_labels_contain_its_labels(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        groups.create(session, organization_id, "eu", {"region": "eu"})
        groups.create(session, organization_id, "eu-gold", {"region": "eu", "tier": "gold"})
        groups.create(session, organization_id, "us", {"region": "us"})
    with plane.session() as session:  # labels as read back from the database
        stored = groups.listed(session, organization_id)
    cases: list[tuple[dict[str, str], list[str]]] = [
        ({}, ["default", "eu", "eu-gold", "us"]),  # a gateway without labels serves every group
        ({"region": "eu"}, ["eu", "eu-gold"]),
        ({"region": "eu", "tier": "gold"}, ["eu-gold"]),
        ({"tier": "gold"}, ["eu-gold"]),
        ({"region": "EU"}, []),  # values compare exactly
        ({"region": "eu", "zone": "a"}, []),  # every gateway label must be in the group
    ]
    for gateway_labels, served in cases:
        assert sorted(g.name for g in stored if groups.matches(g.labels, gateway_labels)) == served, gateway_labels


def test_a_group_name_is_unique_per_organization(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    with plane.session() as session:
        groups.create(session, acme, "eu", {"region": "eu"})
    with pytest.raises(Conflict) as caught, plane.session() as session:
        groups.create(session, acme, "eu", {})
    assert caught.value.field == "name"
    with plane.session() as session:
        groups.create(session, globex, "eu", {})
        assert [g.name for g in groups.listed(session, acme)] == ["default", "eu"]
        assert [g.name for g in groups.listed(session, globex)] == ["default", "eu"]


def test_group_labels_map_names_to_strings(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    invalid: list[dict[Any, Any]] = [{"region": 1}, {"": "x"}, {"region": None}, {"tags": ["a"]}]
    for labels in invalid:
        with pytest.raises(Invalid) as caught, plane.session() as session:
            groups.create(session, organization_id, "eu", labels)
        assert caught.value.field == "labels", labels
    with plane.session() as session:
        assert [g.name for g in groups.listed(session, organization_id)] == ["default"]


def test_updating_group_labels_is_a_change(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        group = groups.create(session, organization_id, "eu", {"region": "eu"})
        before = changes.latest(session, organization_id)
    with plane.session() as session:
        groups.update(session, organization_id, group.id, {"region": "eu-west"})
    with plane.session() as session:
        assert [g.labels for g in groups.listed(session, organization_id) if g.id == group.id] == [
            {"region": "eu-west"}
        ]
        assert changes.latest(session, organization_id) > before


def test_another_organizations_group_is_not_found(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    with plane.session() as session:
        group = groups.create(session, acme, "eu", {"region": "eu"})
    with pytest.raises(NotFound), plane.session() as session:
        groups.update(session, globex, group.id, {})
    with pytest.raises(NotFound), plane.session() as session:
        groups.delete(session, globex, group.id)
    with plane.session() as session:
        assert [g.labels for g in groups.listed(session, acme) if g.id == group.id] == [{"region": "eu"}]


# -- gateways ---------------------------------------------------------------------------------


def test_registering_a_gateway(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        gateway = gateways.register(session, organization_id, "gw-1", {"region": "eu"}, ["mcp.acme.example"], "1.2")
    with plane.session() as session:
        [stored] = gateways.listed(session, organization_id)
    assert stored.id == gateway.id
    assert (stored.name, stored.labels, stored.fqdns, stored.version) == (
        "gw-1",
        {"region": "eu"},
        ["mcp.acme.example"],
        "1.2",
    )
    assert abs(_utc(stored.last_seen) - utcnow()) < timedelta(minutes=1)


def test_registering_again_refreshes_the_same_gateway(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        first = gateways.register(session, organization_id, "gw-1", {"region": "eu"}, ["a.example"], "1.0")
    with plane.session() as session:
        second = gateways.register(session, organization_id, "gw-1", {"region": "us"}, [], None)
    assert second.id == first.id
    with plane.session() as session:
        [stored] = gateways.listed(session, organization_id)
    assert (stored.id, stored.labels, stored.fqdns, stored.version) == (first.id, {"region": "us"}, [], None)


def test_gateways_are_listed_by_name_per_organization(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    with plane.session() as session:
        gateways.register(session, acme, "zulu", {})
        gateways.register(session, acme, "alpha", {})
        gateways.register(session, globex, "alpha", {})
    with plane.session() as session:
        assert [g.name for g in gateways.listed(session, acme)] == ["alpha", "zulu"]
        assert [(g.name, g.organization_id) for g in gateways.listed(session, globex)] == [("alpha", globex)]


@pytest.mark.parametrize(("name", "labels", "field"), [("bad name", {}, "name"), ("gw", {"region": 5}, "labels")])
def test_an_invalid_registration_is_refused(plane: ControlPlane, name: str, labels: dict[str, Any], field: str) -> None:
    organization_id = new_org(plane, "acme")
    with pytest.raises(Invalid) as caught, plane.session() as session:
        gateways.register(session, organization_id, name, labels)
    assert caught.value.field == field
    with plane.session() as session:
        assert gateways.listed(session, organization_id) == []


def _set_last_seen(plane: ControlPlane, gateway_id: str, moment: datetime) -> None:
    with plane.session() as session:
        gateway = session.get(Gateway, gateway_id)
        assert gateway is not None
        gateway.last_seen = moment


def _last_seen(plane: ControlPlane, gateway_id: str) -> datetime:
    with plane.session() as session:
        gateway = session.get(Gateway, gateway_id)
        assert gateway is not None
        return _utc(gateway.last_seen)


def test_touch_refreshes_a_gateway_not_seen_for_a_while(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        gateway = gateways.register(session, organization_id, "gw-1", {})
    long_ago = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    _set_last_seen(plane, gateway.id, long_ago)
    with plane.session() as session:
        gateways.touch(session, organization_id, "gw-1")
    assert _last_seen(plane, gateway.id) > long_ago + timedelta(days=1)


def test_touch_does_not_write_for_a_gateway_seen_just_now(plane: ControlPlane) -> None:
    organization_id = new_org(plane, "acme")
    with plane.session() as session:
        gateway = gateways.register(session, organization_id, "gw-1", {})
    recent = (utcnow() - timedelta(seconds=1)).replace(microsecond=0)
    _set_last_seen(plane, gateway.id, recent)
    with plane.session() as session:
        gateways.touch(session, organization_id, "gw-1")
    assert _last_seen(plane, gateway.id) == recent


def test_touch_ignores_unknown_gateways_and_other_organizations(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    with plane.session() as session:
        gateway = gateways.register(session, acme, "gw-1", {})
    long_ago = datetime(2025, 1, 1, tzinfo=UTC)
    _set_last_seen(plane, gateway.id, long_ago)
    with plane.session() as session:
        gateways.touch(session, acme, "ghost")
        gateways.touch(session, globex, "gw-1")
    assert _last_seen(plane, gateway.id) == long_ago
    with plane.session() as session:
        assert gateways.listed(session, globex) == []
        assert [g.name for g in gateways.listed(session, acme)] == ["gw-1"]
