"""Whose a user value or a pending elicitation is: a user, a session nobody authenticated in, or the gateway.

Stores keep the kinds apart (`user_values`, `pending`): anyone may open as many sessions as they like, so what
sessions hold must never push out what users or the gateway hold.
"""

from __future__ import annotations

_USER = "user "
_SESSION = "session "


def user_owner(principal: str) -> str:
    """The owner of what an authenticated caller supplies (issuer and subject, as its principal names them)."""
    return _USER + principal


def session_owner(session_id: str) -> str:
    """The owner of what a session supplies when nobody is authenticated in it."""
    return _SESSION + session_id


def is_user(owner: str) -> bool:
    return owner.startswith(_USER)


def principal_of(owner: str) -> str | None:
    """The principal a user's owner names (None for another kind of owner)."""
    return owner[len(_USER) :] if is_user(owner) else None


def is_anonymous(owner: str) -> bool:
    return owner.startswith(_SESSION)
