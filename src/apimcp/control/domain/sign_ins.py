"""A person signed in through the company's OpenID provider: who they are here, where they may work, and the
one-time code that hands them a token.

A person is found by the provider's issuer and subject. One who joined by invitation before single sign-on (the
issuer `local`, their e-mail as subject) becomes that identity on their first sign-in with the same verified
address. A person in no organization joins those that invited their verified address (invitations not expired,
not accepted), as an invitation's code would make them join; one that nobody invited is refused, by name.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from apimcp.control.domain import people, tokens
from apimcp.control.errors import Conflict, Forbidden, NotFound
from apimcp.control.models import Invitation, Membership, Organization, SignInHandoff, User, as_utc, utcnow
from apimcp.sso.id_tokens import Person

HANDOFF_SECONDS = 60
HANDOFF_PREFIX = "apimcp_signin_"


def _user(session: Session, person: Person) -> User:
    user = session.scalar(select(User).where(User.issuer == person.issuer, User.subject == person.subject))
    if user is None:
        user = session.scalar(
            select(User).where(User.issuer == people.LOCAL, func.lower(User.email) == person.email).limit(1)
        )
        if user is not None:  # invited before single sign-on: this identity is theirs from now on
            user.issuer, user.subject = person.issuer, person.subject
            # the tokens of that local person were handed to whoever held an invitation's code: not to them
            tokens.revoke_everywhere(session, user.id)
    if user is None:
        user = User(issuer=person.issuer, subject=person.subject, email=person.email, display_name=person.name)
        session.add(user)
    user.email = person.email
    user.display_name = person.name or user.display_name
    user.last_sign_in_at = utcnow()
    session.flush()
    return user


def _join_invited(session: Session, user: User) -> None:
    invited = session.scalars(
        select(Invitation).where(
            Invitation.email == user.email, Invitation.accepted_at.is_(None), Invitation.expires_at > utcnow()
        )
    )
    for invitation in invited:
        if tokens.membership(session, user.id, invitation.organization_id) is None:
            session.add(Membership(user_id=user.id, organization_id=invitation.organization_id, role=invitation.role))
        invitation.accepted_at = utcnow()
        invitation.accepted_by = user.id
    session.flush()


def signed_in(session: Session, person: Person, organization: str | None) -> tuple[User, Organization]:
    """The person, and the organization they work in now: `organization` (a name or id) when they belong to it,
    else the first of theirs by name."""
    user = _user(session, person)
    if not people.memberships(session, user.id):
        _join_invited(session, user)
    theirs = people.memberships(session, user.id)
    if not theirs:
        raise Forbidden(f"{user.email} is in no organization here: ask an admin of yours for an invitation")
    if organization:
        for _, found in theirs:
            if organization in (found.id, found.name):
                return user, found
        raise Forbidden(f"{user.email} is not a member of organization {organization!r}")
    return user, theirs[0][1]


def handoff(session: Session, user: User, organization: Organization) -> str:
    """A code the console or the CLI redeems once, within `HANDOFF_SECONDS`, for the person's token."""
    code = HANDOFF_PREFIX + secrets.token_urlsafe(32)
    session.add(
        SignInHandoff(
            code_hash=tokens.digest(code),
            user_id=user.id,
            organization_id=organization.id,
            expires_at=utcnow() + timedelta(seconds=HANDOFF_SECONDS),
        )
    )
    session.flush()
    return code


def redeem(session: Session, code: str) -> tuple[str, User, Organization, str]:
    """The token a handoff code is worth (made now: its value is never stored), once; with the person, the
    organization and the person's role there."""
    found = session.scalar(select(SignInHandoff).where(SignInHandoff.code_hash == tokens.digest(code.strip())))
    if found is None:
        raise NotFound("no sign-in has this code")
    if found.used_at is not None:
        raise Conflict("this sign-in code was used already: sign in again")
    if as_utc(found.expires_at) <= utcnow():
        raise Conflict("this sign-in code has expired: sign in again")
    found.used_at = utcnow()
    user = session.get(User, found.user_id)
    organization = session.get(Organization, found.organization_id)
    membership = tokens.membership(session, user.id, organization.id) if user and organization else None
    if user is None or organization is None or membership is None:
        raise Forbidden("this person is no longer a member of the organization")
    return people.signed_in(session, user, organization.id), user, organization, membership.role
