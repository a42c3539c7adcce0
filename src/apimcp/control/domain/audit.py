"""Audit events reported by gateways: checked, kept (per organization the newest `KEEP` of answered requests and,
apart, the newest `KEEP_REFUSALS` of refused ones), listed newest first.

A gateway reports only for expositions of its own organization (an embedded gateway serves them all); an
event naming another organization's exposition, or none that exists, is dropped and counted. Events are small
JSON objects (bounded here: a gateway is trusted to report, not to fill the database). Anyone can make an
exposition refuse requests, as many as they like: gateways summarize refusals (`apimcp.audit.refusals`), and
here they have their own retention, so that however many arrive (from a gateway, or from whoever holds its
token) they never push out the events of the requests that were answered.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from apimcp.audit.events import is_event, is_refusal
from apimcp.control.models import AuditEvent, Exposition

KEEP = 10_000
"""Events of answered requests (and of the tool calls scripts made) kept per organization."""
KEEP_REFUSALS = 10_000
"""Events of refused requests (401, 403, 429) and their summaries kept per organization, apart."""
MAX_LISTED = 10_000
"""The most events one listing answers."""
MAX_EVENT_BYTES = 4096
MAX_BATCH = 1000


def record(session: Session, organization_id: str | None, events: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Keep the events of `organization_id`'s expositions (any organization's when None); (kept, dropped)."""
    kept = dropped = 0
    owners: dict[str, str | None] = {}
    touched: set[tuple[str, bool]] = set()
    for event in events:
        if not is_event(event) or _size(event) > MAX_EVENT_BYTES:
            dropped += 1
            continue
        exposition_id = str(event["exposition_id"])
        if exposition_id not in owners:
            owners[exposition_id] = session.scalar(
                select(Exposition.organization_id).where(Exposition.id == exposition_id)
            )
        owner = owners[exposition_id]
        if owner is None or (organization_id is not None and owner != organization_id):
            dropped += 1
            continue
        at = datetime.fromtimestamp(float(event["time"]), UTC)
        refusal = is_refusal(event)
        session.add(
            AuditEvent(organization_id=owner, exposition_id=exposition_id, at=at, event=dict(event), refusal=refusal)
        )
        touched.add((owner, refusal))
        kept += 1
    session.flush()
    for owner, refusal in touched:
        _prune(session, owner, refusal)
    return kept, dropped


def _size(event: Mapping[str, Any]) -> int:
    """The event's size as JSON; one JSON cannot hold (nested past 255 levels, an integer past 64 bits) counts as
    too large: it is dropped, not a 500 that a gateway would send again for ever."""
    try:
        return len(orjson.dumps(event))
    except orjson.JSONEncodeError:
        return MAX_EVENT_BYTES + 1


def _prune(session: Session, organization_id: str, refusal: bool) -> None:
    """The newest of the organization's refusals, or of its other events, kept; the older go."""
    of_kind = (AuditEvent.organization_id == organization_id, AuditEvent.refusal == refusal)
    cutoff = session.scalar(
        select(AuditEvent.id)
        .where(*of_kind)
        .order_by(AuditEvent.id.desc())
        .offset(KEEP_REFUSALS if refusal else KEEP)
        .limit(1)
    )
    if cutoff is not None:
        session.execute(delete(AuditEvent).where(*of_kind, AuditEvent.id <= cutoff))


def latest(
    session: Session,
    organization_id: str,
    limit: int = 100,
    exposition_id: str | None = None,
    refused: bool | None = None,
) -> list[dict[str, Any]]:
    """The newest events first, refusals and others together (`refused`: only refusals, or only the others)."""
    query = select(AuditEvent).where(AuditEvent.organization_id == organization_id)
    if exposition_id is not None:
        query = query.where(AuditEvent.exposition_id == exposition_id)
    if refused is not None:
        query = query.where(AuditEvent.refusal == refused)
    rows = session.scalars(query.order_by(AuditEvent.id.desc()).limit(max(1, min(limit, MAX_LISTED))))
    return [dict(row.event) for row in rows]
