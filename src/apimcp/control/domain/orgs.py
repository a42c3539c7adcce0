"""Organizations, and the first token of a fresh control plane."""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.domain import groups, tokens
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import ApiToken, Organization

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
DEFAULT = "default"


def create(session: Session, name: str) -> Organization:
    if not NAME.fullmatch(name):
        raise Invalid("an organization name is 1-63 lower-case letters, digits or '-'", field="name")
    if session.scalar(select(Organization).where(Organization.name == name)) is not None:
        raise Conflict(f"organization {name!r} already exists", field="name")
    organization = Organization(name=name)
    session.add(organization)
    session.flush()
    groups.create(session, organization.id, "default", {})
    return organization


def by_name(session: Session, name: str) -> Organization:
    organization = session.scalar(select(Organization).where(Organization.name == name))
    if organization is None:
        raise NotFound(f"no organization {name!r}")
    return organization


def bootstrap(session: Session) -> tuple[Organization, str] | None:
    """On an empty control plane: the `default` organization and its first (admin) token."""
    if session.scalar(select(ApiToken).limit(1)) is not None:
        return None
    existing = session.scalar(select(Organization).where(Organization.name == DEFAULT))
    organization = existing or create(session, DEFAULT)
    _, value = tokens.issue(session, organization.id, "bootstrap", tokens.ADMIN)
    return organization, value
