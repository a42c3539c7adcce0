"""Audit events reported by gateways: checked, kept per organization in four trails, each with its own retention
(`audit.events.retention_of`: refused, routine, decided, answered), listed newest first.

A gateway reports only for expositions of its own organization (an embedded gateway serves them all); an
event naming another organization's exposition, or none that exists, is dropped and counted. Events are small
JSON objects (bounded here: a gateway is trusted to report, not to fill the database). Anyone can make an
exposition refuse requests, as many as they like: gateways summarize refusals (`apimcp.audit.refusals`), and
here they have their own retention, so that however many arrive (from a gateway, or from whoever holds its
token) they never push out the events of the requests that were answered. Pings and listings are as cheap to
make, and approvals and guardrail findings what an auditor looks for first: each has its own retention too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from apimcp.audit.events import is_event, is_refusal, retention_of
from apimcp.control.models import AuditEvent, Exposition

KEEP = 10_000
"""Events of answered requests (and of the tool calls scripts made) kept per organization."""
KEEP_REFUSALS = 10_000
"""Events of refused requests (401, 403, 429) and their summaries kept per organization, apart."""
KEEP_ROUTINE = 10_000
"""Events of pings and listings (`audit.events.ROUTINE`) kept per organization, apart."""
KEEP_DECIDED = 10_000
"""Approvals and guardrail findings kept per organization, apart."""
MAX_LISTED = 10_000
"""The most events one listing answers."""
MAX_EVENT_BYTES = 4096
MAX_BATCH = 1000


def record(session: Session, organization_id: str | None, events: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """Keep the events of `organization_id`'s expositions (any organization's when None); (kept, dropped)."""
    kept = dropped = 0
    owners: dict[str, str | None] = {}
    touched: set[tuple[str, str]] = set()
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
        kept_as = retention_of(event)
        session.add(
            AuditEvent(organization_id=owner, exposition_id=exposition_id, at=at, event=dict(event),
                       refusal=is_refusal(event), kept_as=kept_as)
        )  # fmt: skip
        touched.add((owner, kept_as))
        kept += 1
    session.flush()
    for owner, kept_as in touched:
        _prune(session, owner, kept_as)
    return kept, dropped


def _size(event: Mapping[str, Any]) -> int:
    """The event's size as JSON; one JSON cannot hold (nested past 255 levels, an integer past 64 bits) counts as
    too large: it is dropped, not a 500 that a gateway would send again for ever."""
    try:
        return len(orjson.dumps(event))
    except orjson.JSONEncodeError:
        return MAX_EVENT_BYTES + 1


def _prune(session: Session, organization_id: str, kept_as: str) -> None:
    """The newest events of one of the organization's trails kept; the older go."""
    of_kind = (AuditEvent.organization_id == organization_id, AuditEvent.kept_as == kept_as)
    keep = {"refused": KEEP_REFUSALS, "routine": KEEP_ROUTINE, "decided": KEEP_DECIDED}.get(kept_as, KEEP)
    cutoff = session.scalar(select(AuditEvent.id).where(*of_kind).order_by(AuditEvent.id.desc()).offset(keep).limit(1))
    if cutoff is not None:
        session.execute(delete(AuditEvent).where(*of_kind, AuditEvent.id <= cutoff))


def latest(
    session: Session,
    organization_id: str,
    limit: int = 100,
    exposition_id: str | None = None,
    refused: bool | None = None,
    trail: str | None = None,
) -> list[dict[str, Any]]:
    """The newest events first, refusals and others together (`refused`: only refusals, or only the others;
    `trail`: only one trail, `audit.events.retention_of`)."""
    query = select(AuditEvent).where(AuditEvent.organization_id == organization_id)
    if trail is not None:
        query = query.where(AuditEvent.kept_as == trail)
    if exposition_id is not None:
        query = query.where(AuditEvent.exposition_id == exposition_id)
    if refused is not None:
        query = query.where(AuditEvent.refusal == refused)
    rows = session.scalars(query.order_by(AuditEvent.id.desc()).limit(max(1, min(limit, MAX_LISTED))))
    return [dict(row.event) for row in rows]
