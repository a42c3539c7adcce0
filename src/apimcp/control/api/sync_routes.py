"""What gateways call: a snapshot of their expositions, a long poll for the next revision, audit events, and word
that an MCP server they front says it changed."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Response, status

from apimcp.control import changes, snapshot
from apimcp.control.api.auth import GatewayCaller, Plane
from apimcp.control.api.views import (
    AuditBatch,
    AuditKept,
    GatewayRegistration,
    Rereading,
    Revision,
    UpstreamChanged,
    UpstreamStates,
)
from apimcp.control.domain import audit, deliveries, gateway_keys, gateways
from apimcp.control.upstream_refresh import reread_soon

router = APIRouter(prefix="/gateway", tags=["gateway sync"])
LONG_POLL_SECONDS = 25.0


@router.post("/snapshot", responses={200: {"description": "the snapshot (JSON)"}})
def fetch_snapshot(body: GatewayRegistration, caller: GatewayCaller, plane: Plane) -> Response:
    """Register (or refresh) the calling gateway and return what it serves, its secrets sealed to the gateway's key
    (403 unless that key is registered in the organization and not revoked)."""
    with plane.session() as session:
        recipient = gateway_keys.recipient(session, caller.organization_id, caller.organization, body.public_key)
        gateways.register(session, caller.organization_id, body.name, body.labels, body.fqdns, body.version)
        built = snapshot.build(
            session,
            plane.keys,
            organization_id=caller.organization_id,
            labels=body.labels,
            recipient=recipient,
            known_services=body.known_services,
        )
    return Response(snapshot.to_json(built), media_type="application/json")  # no-store, as every answer (no_store.py)


@router.get("/changes", response_model=Revision)
async def wait_for_changes(since: int, caller: GatewayCaller, plane: Plane, name: str | None = None) -> Revision:
    """Answer as soon as the organization's revision exceeds `since`, or after 25 s (or when the control plane
    stops) with the current one."""
    deadline = time.monotonic() + LONG_POLL_SECONDS
    while True:
        seen = plane.signal.generation
        revision = await asyncio.to_thread(_latest, plane, caller.organization_id, name)
        remaining = deadline - time.monotonic()
        if revision > since or remaining <= 0 or plane.signal.closed:
            return Revision(revision=revision)
        await plane.signal.wait(min(changes.POLL_SECONDS, remaining), seen)


def _latest(plane: Plane, organization_id: str, gateway_name: str | None) -> int:
    with plane.session() as session:
        if gateway_name is not None:
            gateways.touch(session, organization_id, gateway_name)
        return changes.latest(session, organization_id)


@router.post("/audit", response_model=AuditKept, status_code=status.HTTP_202_ACCEPTED)
def report_audit(body: AuditBatch, caller: GatewayCaller, plane: Plane) -> AuditKept:
    """Audit events of the gateway's expositions; events of other organizations' expositions are dropped. A batch
    sent again (the same `report` id) adds nothing."""
    with plane.session() as session:
        if not deliveries.first_delivery(session, body.report):
            return AuditKept(kept=0, dropped=0)
        kept, dropped = audit.record(session, caller.organization_id, body.events)
    return AuditKept(kept=kept, dropped=dropped)


@router.post("/upstream-changed", status_code=status.HTTP_202_ACCEPTED, response_model=Rereading)
async def upstream_changed(body: UpstreamChanged, caller: GatewayCaller, plane: Plane) -> Rereading:
    """The gateway heard an MCP server of the organization say its tools, prompts or resources changed: read it
    again soon (at most once a minute per service); what changed is held for an admin as after any reading."""
    soon = reread_soon(plane, caller.organization_id, body.service)
    return Rereading(rereading=soon)


@router.post("/upstreams", status_code=status.HTTP_202_ACCEPTED)
def report_upstreams(body: UpstreamStates, caller: GatewayCaller, plane: Plane) -> Response:
    """What the gateway says of the MCP servers it fronts (service id -> up, failing or unknown), shown with each
    service (`GET /services/{id}`) and in the console."""
    with plane.session() as session:
        gateways.report_upstreams(session, caller.organization_id, body.name, body.upstreams)
    return Response(status_code=status.HTTP_202_ACCEPTED)
