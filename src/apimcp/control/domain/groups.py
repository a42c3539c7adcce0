"""Gateway groups: a gateway serves every group whose labels contain all of the gateway's labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.domain import quotas
from apimcp.control.domain.common import check_name, get_owned
from apimcp.control.errors import Conflict, Invalid
from apimcp.control.models import Exposition, GatewayGroup


def _labels(labels: Mapping[str, Any]) -> dict[str, str]:
    clean = {}
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str) or not key:
            raise Invalid("labels map non-empty names to strings", field="labels")
        clean[key] = value
    return clean


def matches(group_labels: Mapping[str, str], gateway_labels: Mapping[str, str]) -> bool:
    return all(group_labels.get(key) == value for key, value in gateway_labels.items())


def create(session: Session, organization_id: str, name: str, labels: Mapping[str, Any]) -> GatewayGroup:
    check_name(name)
    if session.scalar(
        select(GatewayGroup).where(GatewayGroup.organization_id == organization_id, GatewayGroup.name == name)
    ):
        raise Conflict(f"gateway group {name!r} already exists", field="name")
    quotas.check(session, organization_id, "gateway_groups")
    group = GatewayGroup(organization_id=organization_id, name=name, labels=_labels(labels))
    session.add(group)
    session.flush()
    return group


def update(session: Session, organization_id: str, group_id: str, labels: Mapping[str, Any]) -> GatewayGroup:
    group = get_owned(session, GatewayGroup, organization_id, group_id, "gateway group")
    group.labels = _labels(labels)
    changes.record(session, organization_id, "gateway-group", group.id)
    return group


def delete(session: Session, organization_id: str, group_id: str) -> None:
    group = get_owned(session, GatewayGroup, organization_id, group_id, "gateway group")
    used = session.scalar(select(Exposition).where(Exposition.group_id == group.id).limit(1))
    if used is not None:
        raise Conflict(f"gateway group {group.name!r} still has expositions; delete them first")
    session.delete(group)


def listed(session: Session, organization_id: str) -> list[GatewayGroup]:
    return list(
        session.scalars(
            select(GatewayGroup).where(GatewayGroup.organization_id == organization_id).order_by(GatewayGroup.id)
        )
    )
