"""The audit trail of an organization: the latest events its gateways reported."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Query

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.domain import audit, expositions

router = APIRouter(tags=["audit"])


@router.get("/audit", response_model=list[dict[str, Any]])
def latest_events(
    caller: UserCaller,
    session: DbSession,
    limit: int = Query(default=100, ge=1, le=audit.MAX_LISTED),
    exposition: str | None = Query(default=None, description="an exposition's id or name"),
    refused: bool | None = Query(
        default=None, description="true: only refusals (401, 403, 429) and their summaries; false: only the others"
    ),
    trail: Literal["refused", "routine", "decided", "answered"] | None = Query(
        default=None,
        description="only one trail, each kept apart: refused, routine (pings, listings), decided (approvals, "
        "guardrail findings, signed-in callers' calls a policy denied), answered (every other request)",
    ),
) -> list[dict[str, Any]]:
    """The newest events first: one per MCP request (answered, or refused by authentication or a rate limit) of the
    plans that audit. Beyond the first few refusals of a kind in a minute, one event stands for the rest of them:
    `count` (how many), `first_time` and `last_time`."""
    exposition_id = expositions.id_of(session, caller.organization_id, exposition) if exposition else None
    return audit.latest(session, caller.organization_id, limit, exposition_id, refused, trail)
