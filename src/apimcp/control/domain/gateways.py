"""Gateways as the control plane sees them: registered on connect, seen on every sync."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.domain import quotas
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
    *,
    counted: bool = True,
) -> Gateway:
    """Record (or refresh) a gateway; called on every snapshot it fetches. A gateway new under its name takes a
    place of the organization's quota of gateways (`counted`: unless it is the control plane's own, `apimcp serve`'s
    embedded gateway, which is never refused)."""
    check_name(name)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise Invalid("gateway labels map names to strings", field="labels")
    gateway = session.scalar(select(Gateway).where(Gateway.organization_id == organization_id, Gateway.name == name))
    if gateway is None:
        if counted:
            quotas.check(session, organization_id, "gateways")
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


UPSTREAM_STATES = ("up", "failing", "unknown")
MAX_UPSTREAMS = 5000
FRESH_SECONDS = 300.0
"""A gateway not seen for this long says nothing of its servers any more."""


def report_upstreams(session: Session, organization_id: str, name: str, states: Mapping[str, str]) -> None:
    """Keep what gateway `name` says of the MCP servers it fronts (service id -> state); a gateway that has not
    registered yet is ignored (it reports again)."""
    if len(states) > MAX_UPSTREAMS:
        raise Invalid(f"a gateway reports at most {MAX_UPSTREAMS} services", field="upstreams")
    for service_id, state in states.items():
        if not isinstance(service_id, str) or not 0 < len(service_id) <= 64 or state not in UPSTREAM_STATES:
            raise Invalid(f"each service's state is one of {', '.join(UPSTREAM_STATES)}", field="upstreams")
    gateway = session.scalar(select(Gateway).where(Gateway.organization_id == organization_id, Gateway.name == name))
    if gateway is not None:
        gateway.upstreams = dict(states)
        gateway.last_seen = utcnow()


def upstream_health(session: Session, organization_id: str, service_id: str) -> list[tuple[Gateway, str]]:
    """What the organization's gateways seen lately say of one service's MCP server, by gateway name."""
    now = utcnow()
    return [
        (gateway, str(gateway.upstreams[service_id]))
        for gateway in listed(session, organization_id)
        if gateway.upstreams
        and service_id in gateway.upstreams
        and (now - as_utc(gateway.last_seen)).total_seconds() <= FRESH_SECONDS
    ]
