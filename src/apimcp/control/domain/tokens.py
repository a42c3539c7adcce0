"""API and gateway tokens: shown once, stored as SHA-256 hashes, scoped to an organization, revocable.

A token reads `apimcp_<kind>_<random>`; the kind tells people what a leaked token
opens. Lookups compare hashes, so the database never holds a usable token.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.errors import Invalid, NotFound, Unauthorized
from apimcp.control.models import ApiToken, Organization, as_utc, utcnow

KINDS = ("user", "gateway")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: an organization, through one token of one kind."""

    organization_id: str
    organization: str
    token_id: str
    kind: str


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(
    session: Session, organization_id: str, name: str, kind: str = "user", valid_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token and its value (the only time the value exists outside the caller's hands)."""
    if kind not in KINDS:
        raise Invalid(f"token kind must be one of {', '.join(KINDS)}", field="kind")
    if not name.strip():
        raise Invalid("a token needs a name", field="name")
    if valid_days is not None and not 1 <= valid_days <= 3650:
        raise Invalid("validity must be between 1 and 3650 days", field="valid_days")
    value = f"apimcp_{kind}_{secrets.token_urlsafe(32)}"
    record = ApiToken(
        organization_id=organization_id,
        name=name.strip(),
        kind=kind,
        prefix=value[: len(kind) + 12],
        token_hash=digest(value),
        expires_at=utcnow() + timedelta(days=valid_days) if valid_days else None,
    )
    session.add(record)
    session.flush()
    return record, value


def authenticate(session: Session, value: str, kinds: tuple[str, ...] = ("user",)) -> Caller:
    """The caller a token stands for; Unauthorized for unknown, expired, revoked or wrong-kind tokens."""
    record = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest(value)))
    now = utcnow()
    if record is None or record.revoked_at is not None:
        raise Unauthorized("unknown or revoked token")
    if record.expires_at is not None and as_utc(record.expires_at) <= now:
        raise Unauthorized("the token has expired")
    if record.kind not in kinds:
        raise Unauthorized(f"a {record.kind} token cannot be used here")
    organization = session.get(Organization, record.organization_id)
    assert organization is not None
    if record.last_used_at is None or now - as_utc(record.last_used_at) > timedelta(minutes=1):
        record.last_used_at = now  # coarse, so that busy tokens do not write on every request
    return Caller(organization.id, organization.name, record.id, record.kind)


def revoke(session: Session, organization_id: str, token_id: str) -> ApiToken:
    record = session.get(ApiToken, token_id)
    if record is None or record.organization_id != organization_id:
        raise NotFound(f"no token {token_id!r}")
    if record.revoked_at is None:
        record.revoked_at = utcnow()
    return record


def listed(session: Session, organization_id: str) -> list[ApiToken]:
    return list(
        session.scalars(select(ApiToken).where(ApiToken.organization_id == organization_id).order_by(ApiToken.id))
    )
