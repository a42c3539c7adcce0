"""Who may call: admin and user tokens for the API, gateway tokens for sync, the server's admin token for
organizations. What an admin may do that a user may not is checked where it is done (domain.tokens)."""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

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
) -> Caller:
    token = _bearer(authorization)
    with plane.session() as session:
        caller = tokens.authenticate(session, token, tokens.API_ROLES)
    request.state.caller = caller  # the author of what the request changes (history)
    return caller


def gateway(
    plane: Annotated[ControlPlane, Depends(plane_of)], authorization: Annotated[str | None, Header()] = None
) -> Caller:
    token = _bearer(authorization)
    with plane.session() as session:
        return tokens.authenticate(session, token, (tokens.GATEWAY,))


def admin(authorization: Annotated[str | None, Header()] = None) -> None:
    expected = os.environ.get(ADMIN_TOKEN_VARIABLE)
    if not expected:
        raise Forbidden(f"organizations are managed with the admin token; set {ADMIN_TOKEN_VARIABLE} on the server")
    if not hmac.compare_digest(_bearer(authorization).encode(), expected.encode()):
        raise Unauthorized("not the admin token")


UserCaller = Annotated[Caller, Depends(user)]
GatewayCaller = Annotated[Caller, Depends(gateway)]
# committed before the response is sent (not after: a client's next request must see the change)
DbSession = Annotated[Session, Depends(session_of, scope="function")]
Plane = Annotated[ControlPlane, Depends(plane_of)]
