"""Gateways as the control plane sees them: registered on connect, seen on every sync."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.domain.common import check_name
from apimcp.control.errors import Invalid
from apimcp.control.models import Gateway, as_utc, utcnow


def register(
    session: Session,
    organization_id: str,
    name: str,
    labels: Mapping[str, str],
    fqdns: Sequence[str] = (),
    version: str | None = None,
) -> Gateway:
    """Record (or refresh) a gateway; called on every snapshot it fetches."""
    check_name(name)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise Invalid("gateway labels map names to strings", field="labels")
    gateway = session.scalar(select(Gateway).where(Gateway.organization_id == organization_id, Gateway.name == name))
    if gateway is None:
        gateway = Gateway(organization_id=organization_id, name=name)
        session.add(gateway)
    gateway.labels = dict(labels)
    gateway.fqdns = list(fqdns)
    gateway.version = version
    gateway.last_seen = utcnow()
    session.flush()
    return gateway


def listed(session: Session, organization_id: str) -> list[Gateway]:
    return list(
        session.scalars(select(Gateway).where(Gateway.organization_id == organization_id).order_by(Gateway.name))
    )


def touch(session: Session, organization_id: str, name: str) -> None:
    """Note that a registered gateway is still there (its long polls count as heartbeats)."""
    gateway = session.scalar(select(Gateway).where(Gateway.organization_id == organization_id, Gateway.name == name))
    if gateway is not None and (utcnow() - as_utc(gateway.last_seen)).total_seconds() > 5:
        gateway.last_seen = utcnow()
