"""Audit events reported by gateways: checked, kept (the newest `KEEP` per organization), listed newest first.

A gateway reports only for expositions of its own organization (an embedded gateway serves them all); an
event naming another organization's exposition, or none that exists, is dropped and counted. Events are small
JSON objects (bounded here: a gateway is trusted to report, not to fill the database).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from apimcp.audit.events import is_event
from apimcp.control.models import AuditEvent, Exposition

KEEP = 10_000
MAX_EVENT_BYTES = 4096
MAX_BATCH = 1000


def record(session: Session, organization_id: str | None, events: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Keep the events of `organization_id`'s expositions (any organization's when None); (kept, dropped)."""
    kept = dropped = 0
    owners: dict[str, str | None] = {}
    touched: set[str] = set()
    for event in events:
        if not is_event(event) or len(orjson.dumps(event)) > MAX_EVENT_BYTES:
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
        session.add(AuditEvent(organization_id=owner, exposition_id=exposition_id, at=at, event=dict(event)))
        touched.add(owner)
        kept += 1
    session.flush()
    for owner in touched:
        _prune(session, owner)
    return kept, dropped


def _prune(session: Session, organization_id: str) -> None:
    cutoff = session.scalar(
        select(AuditEvent.id)
        .where(AuditEvent.organization_id == organization_id)
        .order_by(AuditEvent.id.desc())
        .offset(KEEP)
        .limit(1)
    )
    if cutoff is not None:
        session.execute(
            delete(AuditEvent).where(AuditEvent.organization_id == organization_id, AuditEvent.id <= cutoff)
        )


def latest(
    session: Session, organization_id: str, limit: int = 100, exposition_id: str | None = None
) -> list[dict[str, Any]]:
    query = select(AuditEvent).where(AuditEvent.organization_id == organization_id)
    if exposition_id is not None:
        query = query.where(AuditEvent.exposition_id == exposition_id)
    rows = session.scalars(query.order_by(AuditEvent.id.desc()).limit(max(1, min(limit, KEEP))))
    return [dict(row.event) for row in rows]
