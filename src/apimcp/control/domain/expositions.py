"""Expositions: a plan published on a gateway group, optionally named (unique in the organization)."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.domain import quotas
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Exposition, GatewayGroup, Plan

SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")


def _default_group(session: Session, organization_id: str) -> GatewayGroup:
    group = session.scalar(
        select(GatewayGroup).where(GatewayGroup.organization_id == organization_id, GatewayGroup.name == "default")
    )
    if group is None:
        raise NotFound("this organization has no 'default' gateway group; name one", field="group_id")
    return group


def _check_free(session: Session, organization_id: str, name: str, exposition_id: str | None = None) -> None:
    if not SLUG.fullmatch(name):
        raise Invalid("an exposition name is 1-100 lower-case letters, digits, '.', '_' or '-'", field="name")
    taken = session.scalar(
        select(Exposition).where(Exposition.organization_id == organization_id, Exposition.name == name)
    )
    if taken is not None and taken.id != exposition_id:
        raise Conflict(f"exposition {name!r} already exists", field="name")


def _group(session: Session, organization_id: str, group_id: str | None) -> GatewayGroup:
    if group_id is None:
        return _default_group(session, organization_id)
    return get_owned(session, GatewayGroup, organization_id, group_id, "gateway group")


def create(
    session: Session, organization_id: str, plan_id: str, group_id: str | None = None, name: str | None = None
) -> Exposition:
    plan = get_owned(session, Plan, organization_id, plan_id, "plan")
    group = _group(session, organization_id, group_id)
    if name is not None:
        _check_free(session, organization_id, name)
    quotas.check(session, organization_id, "expositions")
    exposition = Exposition(organization_id=organization_id, plan_id=plan.id, group_id=group.id, name=name)
    session.add(exposition)
    session.flush()
    changes.record(session, organization_id, "exposition", exposition.id)
    return exposition


def update(session: Session, organization_id: str, exposition_id: str, values: dict[str, str | None]) -> Exposition:
    """Change an exposition's plan, group or name (`values` holds only what changes; name None unnames it)."""
    exposition = get_owned(session, Exposition, organization_id, exposition_id, "exposition")
    if values.get("plan_id") is not None:
        exposition.plan_id = get_owned(session, Plan, organization_id, str(values["plan_id"]), "plan").id
    if values.get("group_id") is not None:
        exposition.group_id = _group(session, organization_id, values["group_id"]).id
    if "name" in values:
        name = values["name"]
        if name is not None:
            _check_free(session, organization_id, name, exposition.id)
        exposition.name = name
    session.flush()
    changes.record(session, organization_id, "exposition", exposition.id)
    return exposition


def duplicate(session: Session, organization_id: str, exposition_id: str, name: str | None) -> Exposition:
    """A new exposition of the same plan on the same group (a name, when given, must be free)."""
    original = get_owned(session, Exposition, organization_id, exposition_id, "exposition")
    return create(session, organization_id, original.plan_id, original.group_id, name)


def delete(session: Session, organization_id: str, exposition_id: str) -> None:
    exposition = get_owned(session, Exposition, organization_id, exposition_id, "exposition")
    session.delete(exposition)
    changes.record(session, organization_id, "exposition", exposition_id)


def listed(session: Session, organization_id: str) -> list[Exposition]:
    return list(
        session.scalars(select(Exposition).where(Exposition.organization_id == organization_id).order_by(Exposition.id))
    )


def id_of(session: Session, organization_id: str, id_or_name: str) -> str:
    """The id of the organization's exposition with this id or name (a filter of the audit trail or of traffic);
    NotFound naming it otherwise."""
    found = session.scalar(
        select(Exposition.id).where(
            Exposition.organization_id == organization_id,
            (Exposition.id == id_or_name) | (Exposition.name == id_or_name),
        )
    )
    if found is None:
        raise NotFound(f"no exposition {id_or_name!r}", field="exposition")
    return found
