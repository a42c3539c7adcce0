"""Traffic: what gateways report of their expositions' requests, and the figures of a window read back."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, status

from apimcp.control.api.auth import DbSession, GatewayCaller, UserCaller
from apimcp.control.api.views import AuditKept, TrafficReport
from apimcp.control.domain import deliveries, expositions, traffic
from apimcp.control.domain.traffic_figures import WINDOWS, Scope, window

router = APIRouter(tags=["traffic"])


@router.post("/gateway/traffic", response_model=AuditKept, status_code=status.HTTP_202_ACCEPTED)
def report_traffic(body: TrafficReport, caller: GatewayCaller, session: DbSession) -> AuditKept:
    """What the gateway counted since its last report (rows per exposition, method, tool and minute), and the
    revision it serves; rows of other organizations' expositions are dropped. A report sent again (the same
    `report` id) adds nothing."""
    if not deliveries.first_delivery(session, body.report):
        return AuditKept(kept=0, dropped=0)
    kept, dropped = traffic.record(session, caller.organization_id, body.name, body.revision, body.rows)
    return AuditKept(kept=kept, dropped=dropped)


@router.get("/traffic", response_model=dict[str, Any])
def traffic_window(
    caller: UserCaller,
    session: DbSession,
    window_name: str = Query(default="hour", alias="window", description=f"one of {', '.join(WINDOWS)}"),
    exposition: str | None = Query(default=None, description="an exposition's id or name"),
    tool: str | None = Query(default=None, max_length=200, description="a tool's name, as the exposition lists it"),
) -> dict[str, Any]:
    """Calls, errors by kind, p50/p95 latency and backend latency over the last hour (by minute) or day (by
    hour), the busiest and the failing tools, each exposition's figures, and each gateway's health and revision;
    for the organization, one exposition, or one tool."""
    exposition_id = expositions.id_of(session, caller.organization_id, exposition) if exposition else None
    return window(session, Scope(caller.organization_id, exposition_id, tool), window_name)
