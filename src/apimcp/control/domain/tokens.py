"""API and gateway tokens, and the roles they act with: shown once, stored as SHA-256 hashes, scoped to an
organization, revocable.

A token reads `apimcp_<kind>_<random>`; the kind tells people what a leaked token opens. Lookups compare hashes,
so the database never holds a usable token.

Roles, from least to most: `viewer` (reads), `editor` (also changes services, plans, artifacts, expositions,
secrets, gateway groups, runs previews and policy tests), `admin` (also tokens, gateway keys, members and
invitations, the organization's policies, and where secrets go). A token's kind gives its role: an admin token
acts as admin, a user token as editor, a viewer token as viewer; a gateway token only syncs snapshots.

A token is bound either to a service account (a named non-person; every token made before people existed) or to a
person (`models.User`): a person's token acts with the lesser of its kind's role and the person's role in the
organization (`models.Membership`), and stops working when the membership ends. A person's token may act in
another organization the person belongs to (`authenticate(organization=...)`), with the person's role there.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.errors import Forbidden, Invalid, NotFound, Unauthorized
from apimcp.control.models import ApiToken, Membership, Organization, User, as_utc, utcnow

ADMIN, USER, VIEWER, GATEWAY = "admin", "user", "viewer", "gateway"
KINDS = (ADMIN, USER, VIEWER, GATEWAY)
API_ROLES = (ADMIN, USER, VIEWER)
"""The token kinds that may call the REST API."""

EDITOR = "editor"
ROLES = (VIEWER, EDITOR, ADMIN)
"""A person's roles in an organization, and what routes require (`control.api.roles`), from least to most."""
RANK = {role: rank for rank, role in enumerate(ROLES, start=1)}
ROLE_OF_KIND = {ADMIN: ADMIN, USER: EDITOR, VIEWER: VIEWER, GATEWAY: GATEWAY}


def lesser(first: str, second: str) -> str:
    """The lesser of two roles."""
    return first if RANK[first] <= RANK[second] else second


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: an organization, through one token of one kind; a person's token names the person and
    their role in that organization."""

    organization_id: str
    organization: str
    token_id: str
    kind: str
    user_id: str | None = None
    person: str | None = None
    """The person's e-mail address (None: a service account's token)."""
    member_role: str | None = None
    """The person's role in the organization."""

    @property
    def role(self) -> str:
        """What this caller may do here: its token kind's role, at most the person's."""
        own = ROLE_OF_KIND.get(self.kind, self.kind)
        if self.member_role is None or own not in RANK:
            return own
        return lesser(own, self.member_role)

    def may(self, needed: str) -> bool:
        return RANK.get(self.role, 0) >= RANK[needed]

    def described(self) -> str:
        """Who this is and the role they act with, for refusals."""
        if self.person is None:
            return f"this is {_a(self.kind)} token, with the {self.role} role"
        if self.member_role == self.role:
            return f"{self.person} has the {self.role} role here"
        return f"{self.person} acts here through {_a(self.kind)} token, with the {self.role} role"


def _a(kind: str) -> str:
    return "an admin" if kind == ADMIN else f"a {kind}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def require(caller: Caller, needed: str, doing: str) -> None:
    """Forbidden, naming the role needed and the caller's, unless `caller` has at least the role `needed`."""
    if not caller.may(needed):
        raise Forbidden(f"{doing} needs the {needed} role in organization {caller.organization}; {caller.described()}")


def require_admin(caller: Caller, doing: str) -> None:
    """Forbidden, naming what is needed, unless `caller` acts as an admin."""
    require(caller, ADMIN, doing)


def membership(session: Session, user_id: str, organization_id: str) -> Membership | None:
    return session.scalar(
        select(Membership).where(Membership.user_id == user_id, Membership.organization_id == organization_id)
    )


def issue(
    session: Session,
    organization_id: str,
    name: str,
    kind: str = USER,
    valid_days: int | None = None,
    *,
    by: Caller | None = None,
    user_id: str | None = None,
    service_account: str | None = None,
    roams: bool = False,
) -> tuple[ApiToken, str]:
    """A new token and its value (the only time the value exists outside the caller's hands).

    `by` is who asks (None: the control plane itself, for first tokens); only admins issue gateway and admin
    tokens. `user_id` binds the token to a person of the organization; otherwise it belongs to the service account
    `service_account` (default: the token's name). `roams`: a person's token that acts in their other
    organizations too, for their own sign-in only.
    """
    if kind not in KINDS:
        raise Invalid(f"token kind must be one of {', '.join(KINDS)}", field="kind")
    if by is not None and kind in (ADMIN, GATEWAY):
        require_admin(by, f"creating {_a(kind)} token")
    if not name.strip():
        raise Invalid("a token needs a name", field="name")
    if valid_days is not None and not 1 <= valid_days <= 3650:
        raise Invalid("validity must be between 1 and 3650 days", field="valid_days")
    if user_id is not None:
        if kind == GATEWAY:
            raise Invalid("a gateway token belongs to a service account, not to a person", field="user_id")
        if service_account is not None:
            raise Invalid("a token belongs to a person or to a service account, not both", field="service_account")
        if membership(session, user_id, organization_id) is None:
            raise Invalid(f"no member {user_id!r} in this organization", field="user_id")
    elif service_account is not None and not service_account.strip():
        raise Invalid("a service account needs a name", field="service_account")
    value = f"apimcp_{kind}_{secrets.token_urlsafe(32)}"
    record = ApiToken(
        organization_id=organization_id,
        name=name.strip(),
        kind=kind,
        prefix=value[: len(kind) + 12],
        token_hash=digest(value),
        expires_at=utcnow() + timedelta(days=valid_days) if valid_days else None,
        user_id=user_id,
        service_account=None if user_id is not None else (service_account or name).strip(),
        roams=roams and user_id is not None,
    )
    session.add(record)
    session.flush()
    return record, value


def authenticate(
    session: Session, value: str, kinds: tuple[str, ...] = API_ROLES, organization: str | None = None
) -> Caller:
    """The caller a token stands for; Unauthorized for unknown, expired, revoked or wrong-kind tokens, and for a
    person's token whose person left its organization.

    `organization` (a name) is where a person's token acts when not in its own organization: Forbidden unless the
    person is a member there (a service account's token acts only in its own)."""
    record = session.scalar(select(ApiToken).where(ApiToken.token_hash == digest(value)))
    now = utcnow()
    if record is None or record.revoked_at is not None:
        raise Unauthorized("unknown or revoked token")
    if record.expires_at is not None and as_utc(record.expires_at) <= now:
        raise Unauthorized("the token has expired")
    if record.kind not in kinds:
        raise Unauthorized(f"{_a(record.kind)} token cannot be used here")
    home = session.get(Organization, record.organization_id)
    assert home is not None
    person: User | None = None
    role: str | None = None
    if record.user_id is not None:
        person = session.get(User, record.user_id)
        joined = membership(session, record.user_id, home.id)
        if person is None or joined is None:
            raise Unauthorized(f"the token's person is no longer a member of organization {home.name}")
        role = joined.role
    acting = home
    if organization is not None and organization != home.name:
        if person is None:
            raise Forbidden(f"a service account's token acts only in its own organization, {home.name}")
        if not record.roams:
            raise Forbidden(f"this token was issued for {person.email} in organization {home.name} and acts only "
                            "there: sign in to work in another")  # fmt: skip
        elsewhere = session.scalar(select(Organization).where(Organization.name == organization))
        joined = membership(session, person.id, elsewhere.id) if elsewhere is not None else None
        if elsewhere is None or joined is None:
            raise Forbidden(f"{person.email} is not a member of organization {organization!r}")
        acting, role = elsewhere, joined.role
    if record.last_used_at is None or now - as_utc(record.last_used_at) > timedelta(minutes=1):
        record.last_used_at = now  # coarse, so that busy tokens do not write on every request
    return Caller(
        acting.id,
        acting.name,
        record.id,
        record.kind,
        user_id=person.id if person is not None else None,
        person=person.email if person is not None else None,
        member_role=role,
    )


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


def revoke_everywhere(session: Session, user_id: str) -> int:
    """Revoke every token of a person, in every organization; how many were live."""
    now = utcnow()
    live = session.scalars(select(ApiToken).where(ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None))).all()
    for record in live:
        record.revoked_at = now
    return len(live)


def revoke_persons(session: Session, organization_id: str, user_id: str) -> int:
    """Revoke every token of a person in an organization (their membership ended); how many were live."""
    now = utcnow()
    live = session.scalars(
        select(ApiToken).where(
            ApiToken.organization_id == organization_id, ApiToken.user_id == user_id, ApiToken.revoked_at.is_(None)
        )
    ).all()
    for record in live:
        record.revoked_at = now
    return len(live)


def listed(session: Session, organization_id: str) -> list[ApiToken]:
    return list(
        session.scalars(select(ApiToken).where(ApiToken.organization_id == organization_id).order_by(ApiToken.id))
    )
