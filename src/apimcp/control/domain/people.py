"""People: who belongs to an organization with which role, and how they join.

A person (`User`) is named by an identity provider's issuer and subject; until single sign-on, a person who joins
by invitation is a "local" person whose subject is their e-mail address. A membership gives a person a role in an
organization (admin, editor or viewer: `tokens.ROLES`). An admin invites an e-mail address with a role and gets a
one-time code, kept only as its hash; whoever accepts it (`accept`) becomes a member:

- a signed-in person (through a token bound to them) whose e-mail is the invitation's joins with that identity;
- without a token, the code alone makes a new local person of the invitation's e-mail, when no person has that
  address yet (an existing person signs in to accept: a code must not open their other organizations).

Removing a member revokes their tokens of that organization at once.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from apimcp.control.domain import tokens
from apimcp.control.domain.tokens import Caller
from apimcp.control.errors import Conflict, Forbidden, Invalid, NotFound, Unauthorized
from apimcp.control.models import ApiToken, Invitation, Membership, Organization, User, as_utc, utcnow

LOCAL = "local"
"""The issuer of people who joined by invitation, before single sign-on."""
EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")
DEFAULT_VALID_DAYS = 7
CODE_PREFIX = "apimcp_invite_"


@dataclass(frozen=True, slots=True)
class Member:
    membership: Membership
    user: User


@dataclass(frozen=True, slots=True)
class Accepted:
    membership: Membership
    user: User
    organization: Organization
    new_person: bool
    """The code made a new local person (who then needs a token: `control.api.people_routes`)."""


def normalized_email(email: str) -> str:
    address = email.strip().lower()
    if len(address) > 254 or not EMAIL.fullmatch(address):
        raise Invalid("an e-mail address reads name@domain.tld", field="email")
    return address


def check_role(role: str) -> str:
    if role not in tokens.ROLES:
        raise Invalid(f"a role is one of {', '.join(tokens.ROLES)}", field="role")
    return role


def who(caller: Caller) -> str:
    """How history and invitations name a caller: the person's e-mail, else the service account's token id."""
    return caller.person or f"token {caller.token_id}"


# --- members -------------------------------------------------------------------------------------------------


def members(session: Session, organization_id: str) -> list[Member]:
    rows = session.execute(
        select(Membership, User)
        .join(User, User.id == Membership.user_id)
        .where(Membership.organization_id == organization_id)
        .order_by(User.email, User.id)
    ).all()
    return [Member(membership, user) for membership, user in rows]


def member(session: Session, organization_id: str, user_id: str) -> Member:
    found = tokens.membership(session, user_id, organization_id)
    user = session.get(User, user_id) if found is not None else None
    if found is None or user is None:
        raise NotFound(f"no member {user_id!r}")
    return Member(found, user)


def _keep_an_admin(session: Session, organization_id: str, found: Member, doing: str) -> None:
    """Conflict when `found` is the organization's last admin: no other admin member, and no live admin token of a
    service account (nobody would be left to manage its people)."""
    if found.membership.role != tokens.ADMIN:
        return
    others = session.scalar(
        select(func.count())
        .select_from(Membership)
        .where(
            Membership.organization_id == organization_id,
            Membership.role == tokens.ADMIN,
            Membership.id != found.membership.id,
        )
    )
    now = utcnow()
    robots = session.scalar(
        select(func.count())
        .select_from(ApiToken)
        .where(
            ApiToken.organization_id == organization_id,
            ApiToken.kind == tokens.ADMIN,
            ApiToken.user_id.is_(None),
            ApiToken.revoked_at.is_(None),
            (ApiToken.expires_at.is_(None)) | (ApiToken.expires_at > now),
        )
    )
    if not others and not robots:
        raise Conflict(f"{found.user.email} is the organization's last admin: make another member admin before {doing}")


def set_role(session: Session, organization_id: str, user_id: str, role: str) -> Member:
    found = member(session, organization_id, user_id)
    if check_role(role) != tokens.ADMIN:
        _keep_an_admin(session, organization_id, found, "changing their role")
    found.membership.role = role
    session.flush()
    return found


def remove(session: Session, organization_id: str, user_id: str) -> int:
    """End a membership; the person's tokens of the organization are revoked (how many were live)."""
    found = member(session, organization_id, user_id)
    _keep_an_admin(session, organization_id, found, "removing them")
    revoked = tokens.revoke_persons(session, organization_id, user_id)
    session.delete(found.membership)
    session.flush()
    return revoked


def memberships(session: Session, user_id: str) -> list[tuple[Membership, Organization]]:
    rows = session.execute(
        select(Membership, Organization)
        .join(Organization, Organization.id == Membership.organization_id)
        .where(Membership.user_id == user_id)
        .order_by(Organization.name)
    ).all()
    return [(m, o) for m, o in rows]


# --- invitations ---------------------------------------------------------------------------------------------

MAX_PENDING_INVITATIONS = 1000
"""Invitations not accepted yet (expired ones included, until withdrawn), per organization."""


def invite(
    session: Session,
    organization_id: str,
    email: str,
    role: str,
    *,
    by: Caller,
    valid_days: int = DEFAULT_VALID_DAYS,
) -> tuple[Invitation, str]:
    """An invitation and its code (shown this once: only its hash is kept)."""
    address = normalized_email(email)
    check_role(role)
    if not 1 <= valid_days <= 90:
        raise Invalid("an invitation is valid 1 to 90 days", field="valid_days")
    joined = session.scalar(
        select(Membership)
        .join(User, User.id == Membership.user_id)
        .where(Membership.organization_id == organization_id, func.lower(User.email) == address)
    )
    if joined is not None:
        raise Conflict(f"{address} is already a member", field="email")
    waiting = session.scalar(
        select(func.count())
        .select_from(Invitation)
        .where(Invitation.organization_id == organization_id, Invitation.accepted_at.is_(None))
    )
    if (waiting or 0) >= MAX_PENDING_INVITATIONS:
        raise Conflict(f"the organization has {MAX_PENDING_INVITATIONS} invitations not accepted yet: withdraw some "
                       "first")  # fmt: skip
    code = CODE_PREFIX + secrets.token_urlsafe(24)
    invitation = Invitation(
        organization_id=organization_id,
        email=address,
        role=role,
        code_hash=tokens.digest(code),
        expires_at=utcnow() + timedelta(days=valid_days),
        invited_by=who(by),
    )
    session.add(invitation)
    session.flush()
    return invitation, code


def pending(session: Session, organization_id: str) -> list[Invitation]:
    """The invitations not accepted yet (expired ones included, until withdrawn)."""
    return list(
        session.scalars(
            select(Invitation)
            .where(Invitation.organization_id == organization_id, Invitation.accepted_at.is_(None))
            .order_by(Invitation.id)
        )
    )


def withdraw(session: Session, organization_id: str, invitation_id: str) -> None:
    invitation = session.get(Invitation, invitation_id)
    if invitation is None or invitation.organization_id != organization_id or invitation.accepted_at is not None:
        raise NotFound(f"no pending invitation {invitation_id!r}")
    session.delete(invitation)
    session.flush()


def accept(session: Session, code: str, person: Caller | None, display_name: str | None = None) -> Accepted:
    """Make the membership an invitation offers, once; `person` is who is signed in (None: the code alone)."""
    invitation = session.scalar(select(Invitation).where(Invitation.code_hash == tokens.digest(code.strip())))
    if invitation is None:
        raise NotFound("no invitation has this code")
    if invitation.accepted_at is not None:
        raise Conflict("this invitation was accepted already: a code works once")
    if as_utc(invitation.expires_at) <= utcnow():
        raise Conflict("this invitation has expired: ask an admin of the organization for a new one")
    organization = session.get(Organization, invitation.organization_id)
    assert organization is not None
    new_person = False
    if person is not None:
        if person.user_id is None:
            raise Forbidden("a service account cannot accept an invitation: a person signs in to accept it")
        user = session.get(User, person.user_id)
        assert user is not None
        if user.email.lower() != invitation.email:
            raise Forbidden(f"this invitation is for {invitation.email}; you are signed in as {user.email}")
        if tokens.membership(session, user.id, organization.id) is not None:
            raise Conflict(f"{user.email} is already a member of organization {organization.name}")
    else:
        known = session.scalar(select(User).where(func.lower(User.email) == invitation.email).limit(1))
        if known is not None:
            raise Unauthorized(f"{invitation.email} has signed in before: sign in as {invitation.email} to accept")
        name = (display_name or "").strip()[:200] or None
        user = User(issuer=LOCAL, subject=invitation.email, email=invitation.email, display_name=name)
        session.add(user)
        session.flush()
        new_person = True
    joined = Membership(user_id=user.id, organization_id=organization.id, role=invitation.role)
    session.add(joined)
    invitation.accepted_at = utcnow()
    invitation.accepted_by = user.id
    session.flush()
    return Accepted(joined, user, organization, new_person)


def signed_in(session: Session, user: User, organization_id: str) -> str:
    """A token for a person who just signed in, or joined with an invitation's code alone (their role governs what
    it does): its value. It acts in their other organizations too (`X-Organization`), unlike a token an admin
    issues for them. Whoever used a code holds the token of the local person it made, which is why single sign-on
    revokes those tokens when it adopts that person (`sign_ins._user`)."""
    user.last_sign_in_at = utcnow()
    _, value = tokens.issue(session, organization_id, f"signed in {utcnow():%Y-%m-%d}", tokens.ADMIN, user_id=user.id,
                            roams=True)  # fmt: skip
    return value
