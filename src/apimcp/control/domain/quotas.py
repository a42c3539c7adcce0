"""Quotas: how many expositions, gateway groups and gateways an organization may have (none set: no limit).

An admin sets them; a quota lower than what is in use removes nothing, it refuses what would add one more. They are
checked where each is made (`expositions.create`, `groups.create`, `gateways.register` for a gateway that is new
under its name), and the refusal says which quota, how many are in use, and who can raise it (429).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from apimcp.control.errors import DomainError, Invalid
from apimcp.control.models import Base, Exposition, Gateway, GatewayGroup, Organization

MAX = 1_000_000


class QuotaReached(DomainError):
    status = 429
    title = "Quota reached"


@dataclass(frozen=True, slots=True)
class Kind:
    column: str
    model: type[Base]
    one: str
    many: str


KINDS: dict[str, Kind] = {
    "expositions": Kind("quota_expositions", Exposition, "exposition", "expositions"),
    "gateway_groups": Kind("quota_gateway_groups", GatewayGroup, "gateway group", "gateway groups"),
    "gateways": Kind("quota_gateways", Gateway, "gateway", "gateways"),
}


def _organization(session: Session, organization_id: str) -> Organization:
    organization = session.get(Organization, organization_id)
    assert organization is not None
    return organization


def used(session: Session, organization_id: str, kind: str) -> int:
    model: Any = KINDS[kind].model
    count = session.scalar(select(func.count()).select_from(model).where(model.organization_id == organization_id))
    return int(count or 0)


def shown(session: Session, organization_id: str) -> dict[str, dict[str, int | None]]:
    """Each quota (`limit`, None: no limit) with what is `used`."""
    organization = _organization(session, organization_id)
    return {
        kind: {"limit": getattr(organization, spec.column), "used": used(session, organization_id, kind)}
        for kind, spec in KINDS.items()
    }


def set_limits(session: Session, organization_id: str, values: Mapping[str, Any]) -> dict[str, dict[str, int | None]]:
    """Set the quotas named in `values` (a whole number >= 0, or None for no limit); the others stay as they are.
    Who may is the route's business (an admin)."""
    organization = _organization(session, organization_id)
    for kind, limit in values.items():
        if kind not in KINDS:
            raise Invalid(f"there is no quota of {kind!r}; quotas are {', '.join(KINDS)}", field=kind)
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX):
            raise Invalid(f"a quota is a whole number from 0 to {MAX}, or null for no limit", field=kind)
    for kind, limit in values.items():
        setattr(organization, KINDS[kind].column, limit)
    session.flush()
    return shown(session, organization_id)


def check(session: Session, organization_id: str, kind: str) -> None:
    """QuotaReached unless the organization may have one more of `kind`.

    On PostgreSQL the organization's row is locked until the transaction ends, so that two requests cannot both
    take the last place (SQLite writes one transaction at a time anyway)."""
    spec = KINDS[kind]
    limit = session.scalar(
        select(getattr(Organization, spec.column)).where(Organization.id == organization_id).with_for_update()
    )
    if limit is None:
        return
    count = used(session, organization_id, kind)
    if count >= limit:
        noun = spec.one if limit == 1 else spec.many
        raise QuotaReached(
            f"the organization's quota of {limit} {noun} is reached ({count} in use); an admin can raise it",
            field=kind,
        )
