"""API and gateway tokens: shown once, stored as SHA-256 hashes, scoped to an organization, revocable.

A token reads `apimcp_<kind>_<random>`; the kind is the token's role and tells
people what a leaked token opens. Lookups compare hashes, so the database never
holds a usable token.

Roles: an admin token does everything in its organization; a user token does the
same except what hands out access or secrets: creating gateway or admin tokens,
revoking admin tokens and registering or revoking gateway keys. A gateway token
only syncs snapshots.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.errors import Forbidden, Invalid, NotFound, Unauthorized
from apimcp.control.models import ApiToken, Organization, as_utc, utcnow

ADMIN, USER, GATEWAY = "admin", "user", "gateway"
KINDS = (ADMIN, USER, GATEWAY)
API_ROLES = (ADMIN, USER)
"""The roles that may call the REST API."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: an organization, through one token of one kind."""

    organization_id: str
    organization: str
    token_id: str
    kind: str


def _a(kind: str) -> str:
    return "an admin" if kind == ADMIN else f"a {kind}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def require_admin(caller: Caller, doing: str) -> None:
    """Forbidden, naming what is needed, unless `caller` holds an admin token."""
    if caller.kind != ADMIN:
        raise Forbidden(
            f"{doing} needs an admin token of organization {caller.organization}; this is {_a(caller.kind)} token"
        )


def issue(
    session: Session,
    organization_id: str,
    name: str,
    kind: str = USER,
    valid_days: int | None = None,
    *,
    by: Caller | None = None,
) -> tuple[ApiToken, str]:
    """A new token and its value (the only time the value exists outside the caller's hands).

    `by` is who asks (None: the control plane itself, for first tokens); only admins issue gateway and admin tokens.
    """
    if kind not in KINDS:
        raise Invalid(f"token kind must be one of {', '.join(KINDS)}", field="kind")
    if by is not None and kind in (ADMIN, GATEWAY):
        require_admin(by, f"creating {_a(kind)} token")
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


def authenticate(session: Session, value: str, kinds: tuple[str, ...] = API_ROLES) -> Caller:
    """The caller a token stands for; Unauthorized for unknown, expired, revoked or wrong-kind tokens."""
    record = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest(value)))
    now = utcnow()
    if record is None or record.revoked_at is not None:
        raise Unauthorized("unknown or revoked token")
    if record.expires_at is not None and as_utc(record.expires_at) <= now:
        raise Unauthorized("the token has expired")
    if record.kind not in kinds:
        raise Unauthorized(f"{_a(record.kind)} token cannot be used here")
    organization = session.get(Organization, record.organization_id)
    assert organization is not None
    if record.last_used_at is None or now - as_utc(record.last_used_at) > timedelta(minutes=1):
        record.last_used_at = now  # coarse, so that busy tokens do not write on every request
    return Caller(organization.id, organization.name, record.id, record.kind)


def revoke(session: Session, organization_id: str, token_id: str, *, by: Caller | None = None) -> ApiToken:
    """Revoke a token at once (only admins revoke admin tokens); revoking again keeps the first time."""
    record = session.get(ApiToken, token_id)
    if record is None or record.organization_id != organization_id:
        raise NotFound(f"no token {token_id!r}")
    if by is not None and record.kind == ADMIN:
        require_admin(by, "revoking an admin token")
    if record.revoked_at is None:
        record.revoked_at = utcnow()
    return record


def listed(session: Session, organization_id: str) -> list[ApiToken]:
    return list(
        session.scalars(select(ApiToken).where(ApiToken.organization_id == organization_id).order_by(ApiToken.id))
    )
