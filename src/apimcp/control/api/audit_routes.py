"""The audit trail of an organization: the latest events its gateways reported."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy import select

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.domain import audit
from apimcp.control.errors import NotFound
from apimcp.control.models import Exposition

router = APIRouter(tags=["audit"])


@router.get("/audit", response_model=list[dict[str, Any]])
def latest_events(
    caller: UserCaller,
    session: DbSession,
    limit: int = Query(default=100, ge=1, le=audit.KEEP),
    exposition: str | None = Query(default=None, description="an exposition's id or name"),
) -> list[dict[str, Any]]:
    """The newest events first: one per MCP request (answered, or refused by authentication or a rate limit) of the
    plans that audit."""
    exposition_id = None
    if exposition is not None:
        exposition_id = session.scalar(
            select(Exposition.id).where(
                Exposition.organization_id == caller.organization_id,
                (Exposition.id == exposition) | (Exposition.name == exposition),
            )
        )
        if exposition_id is None:
            raise NotFound(f"no exposition {exposition!r}", field="exposition")
    return audit.latest(session, caller.organization_id, limit, exposition_id)
