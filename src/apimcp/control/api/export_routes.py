"""`GET /export`: what the organization holds, for `apimcp export` to write as a configuration file."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from apimcp.control.api.auth import DbSession, Plane, UserCaller
from apimcp.control.domain.export import organization_export

router = APIRouter()


@router.get("/export", response_model=dict[str, Any], tags=["organizations"])
def export(caller: UserCaller, session: DbSession, plane: Plane) -> dict[str, Any]:
    """The organization's policies, services (their main description and attached artifacts, base64), plans,
    expositions (with their gateway group's name) and the secrets the plans use: kind, public fields and the names
    of the values they hold, never the values."""
    return organization_export(session, plane.keys, caller.organization_id)
