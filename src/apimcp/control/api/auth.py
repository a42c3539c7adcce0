"""Who may call: API tokens (admin, user, viewer) for the API, with the role each route requires (`roles.REQUIRED`,
checked here, in `user`); gateway tokens for sync; the server's admin token for organizations.

A person's token acts in another organization the person belongs to when the request names it in the
`X-Organization` header (the organization's name); without the header it acts in its own."""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from apimcp.control.api import roles
from apimcp.control.domain import history, tokens
from apimcp.control.domain.tokens import Caller
from apimcp.control.errors import Forbidden, Unauthorized
from apimcp.control.plane import ControlPlane

ADMIN_TOKEN_VARIABLE = "APIMCP_ADMIN_TOKEN"


def plane_of(request: Request) -> ControlPlane:
    plane: ControlPlane = request.app.state.plane
    return plane


def session_of(request: Request, plane: Annotated[ControlPlane, Depends(plane_of)]) -> Iterator[Session]:
    with plane.session() as session:
        history.acting(session, lambda: _caller_of(request))  # who made what the session changes
        yield session


def _caller_of(request: Request) -> Caller | None:
    """The API caller `user` found for this request, if any."""
    caller = getattr(request.state, "caller", None)
    return caller if isinstance(caller, Caller) else None


def _bearer(authorization: str | None) -> str:
    if authorization is None or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send a token: Authorization: Bearer <token>")
    return authorization[7:].strip()


def user(
    request: Request,
    plane: Annotated[ControlPlane, Depends(plane_of)],
    authorization: Annotated[str | None, Header()] = None,
    x_organization: Annotated[
        str | None, Header(description="act in this organization (a person's token, the person a member there)")
    ] = None,
) -> Caller:
    """The caller, refused (403, naming the role) unless it has the role the route requires (`roles.REQUIRED`)."""
    needed = roles.required(request)
    if needed not in tokens.RANK:
        raise Forbidden(f"{request.method} {request.url.path} is not for API tokens")
    token = _bearer(authorization)
    with plane.session() as session:
        caller = tokens.authenticate(session, token, tokens.API_ROLES, x_organization or None)
    method, path = roles.route_key(request)
    tokens.require(caller, needed, f"{method} /api/v1{path}")
    request.state.caller = caller  # the author of what the request changes (history)
    return caller


def person(
    request: Request,
    plane: Annotated[ControlPlane, Depends(plane_of)],
    authorization: Annotated[str | None, Header()] = None,
) -> Caller | None:
    """Who is signed in, if a token is sent (routes that an invitation's code opens: `roles.INVITED`)."""
    if roles.required(request) != roles.INVITED:
        raise Forbidden(f"{request.method} {request.url.path} is not opened by an invitation")
    if authorization is None:
        return None
    with plane.session() as session:
        caller = tokens.authenticate(session, _bearer(authorization), tokens.API_ROLES)
    request.state.caller = caller
    return caller


def signing_in(request: Request) -> None:
    """Nothing to check: single sign-on's steps are for people who have no token yet (each step checks what it is
    given: the sealed state, the provider's ID token, the one-time code)."""
    if roles.required(request) != roles.SIGNING_IN:
        raise Forbidden(f"{request.method} {request.url.path} is not a step of signing in")


def gateway(
    request: Request,
    plane: Annotated[ControlPlane, Depends(plane_of)],
    authorization: Annotated[str | None, Header()] = None,
) -> Caller:
    if roles.required(request) != roles.GATEWAY:
        raise Forbidden(f"{request.method} {request.url.path} is not for gateway tokens")
    token = _bearer(authorization)
    with plane.session() as session:
        return tokens.authenticate(session, token, (tokens.GATEWAY,))


def admin(request: Request, authorization: Annotated[str | None, Header()] = None) -> None:
    if roles.required(request) != roles.OPERATOR:
        raise Forbidden(f"{request.method} {request.url.path} is not for the server's admin token")
    expected = os.environ.get(ADMIN_TOKEN_VARIABLE)
    if not expected:
        raise Forbidden(f"organizations are managed with the admin token; set {ADMIN_TOKEN_VARIABLE} on the server")
    if not hmac.compare_digest(_bearer(authorization).encode(), expected.encode()):
        raise Unauthorized("not the admin token")


UserCaller = Annotated[Caller, Depends(user)]
PersonOrNone = Annotated[Caller | None, Depends(person)]
GatewayCaller = Annotated[Caller, Depends(gateway)]
# committed before the response is sent (not after: a client's next request must see the change)
DbSession = Annotated[Session, Depends(session_of, scope="function")]
Plane = Annotated[ControlPlane, Depends(plane_of)]
