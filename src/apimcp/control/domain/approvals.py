"""Approvals by an administrator: a call that a policy rule sends to an admin (`approver: admin`) waits here until
one approves or refuses it.

A gateway asks about a call by its exposition, tool, the digest of its arguments and its caller (`submit`). The
first time, a pending request is made that lives `lifetime` seconds; asked again, the answer is the state of the
live request of that call: pending, approved or refused. An approval serves exactly one call: the submit that
reads it marks it used (at most one submit does, however many ask at once), and the call made again after that is
a new request. Admins list the requests (`listed`) and decide the pending ones that have not expired (`decide`);
an approval lives `lifetime` seconds again from the moment it is given.

A flood cannot fill the table: an organization has at most `MAX_PENDING` live pending requests, and a caller at most
`MAX_PENDING_PER_CALLER` of them (more are refused with 429; on PostgreSQL an advisory lock makes the count and the
insert one step per organization), and requests that expired more than `KEPT_AFTER_EXPIRY` ago are deleted as new
ones are made.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import CursorResult, case, delete, func, select, update
from sqlalchemy.orm import Session

from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Conflict, DomainError, Invalid, NotFound
from apimcp.control.models import ApprovalRequest, Exposition, as_utc, utcnow

PENDING, APPROVED, REFUSED, USED = "pending", "approved", "refused", "used"
STATUSES = (PENDING, APPROVED, REFUSED, USED)
MAX_PENDING = 1000
"""Live pending requests an organization may have at once."""
MAX_PENDING_PER_CALLER = 100
"""Live pending requests one caller may have at once: an agent looping with ever new arguments fills its own share,
not the organization's (callers without a principal share one, "anonymous")."""
MIN_LIFETIME, MAX_LIFETIME = 1.0, 3600.0
"""How long a request may wait for its decision, in seconds."""
KEPT_AFTER_EXPIRY = timedelta(days=1)
MAX_LISTED = 10_000
"""The most requests one listing reads, newest first."""
MAX_LENGTHS = {"exposition": 64, "tool": 200, "digest": 64, "caller": 512, "question": 5000}
"""The longest each text field of a submitted call may be, in characters (a question shows up to 4,000 of
arguments, `policies.approval.MAX_SHOWN`, with the tool's name and the rule's message)."""


class TooManyPending(DomainError):
    status = 429
    title = "Too many pending approvals"


@dataclass(frozen=True, slots=True)
class Call:
    """A call waiting for an admin, as a gateway submits it (checked)."""

    exposition: str
    tool: str
    digest: str
    caller: str
    question: str
    lifetime: float


def _text(request: Mapping[str, Any], name: str) -> str:
    value = request.get(name)
    longest = MAX_LENGTHS[name]
    if not isinstance(value, str):
        raise Invalid(f"{name} is required: a string of at most {longest} characters", field=name)
    if len(value) > longest:
        raise Invalid(f"{name} has {len(value)} characters; at most {longest} are allowed", field=name)
    if name != "question" and not value:
        raise Invalid(f"{name} is empty", field=name)
    if "\x00" in value:  # no database keeps it in text (PostgreSQL refuses it)
        raise Invalid(f"{name} holds a NUL character", field=name)
    return value


def _lifetime(request: Mapping[str, Any]) -> float:
    value = request.get("lifetime")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Invalid(f"lifetime is required: seconds, from {MIN_LIFETIME:g} to {MAX_LIFETIME:g}", field="lifetime")
    if not MIN_LIFETIME <= value <= MAX_LIFETIME:
        raise Invalid(f"lifetime is {value:g} s; it is from {MIN_LIFETIME:g} to {MAX_LIFETIME:g}", field="lifetime")
    return float(value)


def checked(request: Mapping[str, Any]) -> Call:
    """The call `request` describes; Invalid naming the first field that is missing, of the wrong type or too long."""
    texts = {name: _text(request, name) for name in MAX_LENGTHS}
    return Call(**texts, lifetime=_lifetime(request))


def _owner(session: Session, organization_id: str | None, exposition_id: str) -> str:
    """The organization of the exposition, when it is `organization_id`'s (any organization's when None)."""
    owner = session.scalar(select(Exposition.organization_id).where(Exposition.id == exposition_id))
    if owner is None or (organization_id is not None and owner != organization_id):
        raise NotFound(f"no exposition {exposition_id!r}", field="exposition")
    return owner


def _seconds_left(request: ApprovalRequest, now: datetime) -> float:
    return max(0.0, (as_utc(request.expires_at) - now).total_seconds())


def _newest_live(session: Session, owner: str, call: Call, now: datetime) -> ApprovalRequest | None:
    """The request of this call that has not expired and is not used, decided ones first (the same call made twice
    at once can make two requests: whichever an admin decides is the one that counts), else the newest."""
    return session.scalar(
        select(ApprovalRequest)
        .where(
            ApprovalRequest.exposition_id == call.exposition,
            ApprovalRequest.tool == call.tool,
            ApprovalRequest.digest == call.digest,
            ApprovalRequest.caller == call.caller,
            ApprovalRequest.organization_id == owner,
            ApprovalRequest.status != USED,
            ApprovalRequest.expires_at > now,
        )
        .order_by(
            case((ApprovalRequest.status == APPROVED, 0), (ApprovalRequest.status == REFUSED, 1), else_=2),
            ApprovalRequest.created_at.desc(),
            ApprovalRequest.id.desc(),
        )
        .limit(1)
    )


def _changed(session: Session, request_id: str, before: str, after: Mapping[str, Any]) -> bool:
    """Whether the request still had status `before` and now has `after`'s values (one writer wins a race)."""
    result = session.execute(
        update(ApprovalRequest)
        .where(ApprovalRequest.id == request_id, ApprovalRequest.status == before)
        .values(**after)
        .execution_options(synchronize_session=False)
    )
    assert isinstance(result, CursorResult)
    return result.rowcount == 1


def _pending_count(session: Session, owner: str, now: datetime, caller: str | None = None) -> int:
    """The organization's live pending requests (`caller`'s alone when given)."""
    query = (
        select(func.count())
        .select_from(ApprovalRequest)
        .where(
            ApprovalRequest.organization_id == owner,
            ApprovalRequest.expires_at > now,
            ApprovalRequest.status == PENDING,
        )
    )
    if caller is not None:
        query = query.where(ApprovalRequest.caller == caller)
    return int(session.scalar(query) or 0)


def _prune(session: Session, owner: str, now: datetime) -> None:
    session.execute(
        delete(ApprovalRequest)
        .where(ApprovalRequest.organization_id == owner, ApprovalRequest.expires_at < now - KEPT_AFTER_EXPIRY)
        .execution_options(synchronize_session=False)
    )


def _new_request(session: Session, owner: str, call: Call, now: datetime) -> dict[str, Any]:
    if session.get_bind().dialect.name == "postgresql":  # the count and the insert below, one organization at a time
        session.execute(select(func.pg_advisory_xact_lock(_lock_key(owner))))
    _prune(session, owner, now)
    if _pending_count(session, owner, now, call.caller) >= MAX_PENDING_PER_CALLER:
        raise TooManyPending(
            f"the caller has {MAX_PENDING_PER_CALLER} approval requests pending, the most one caller may have: an "
            "admin decides some (`apimcp approvals list`), or they expire"
        )
    if _pending_count(session, owner, now) >= MAX_PENDING:
        raise TooManyPending(
            f"the organization has {MAX_PENDING} approval requests pending, the most it may have: an admin decides "
            "some (`apimcp approvals list`), or they expire"
        )
    request = ApprovalRequest(
        organization_id=owner, exposition_id=call.exposition, tool=call.tool, digest=call.digest,
        caller=call.caller, question=call.question, status=PENDING, created_at=now,
        expires_at=now + timedelta(seconds=call.lifetime),
    )  # fmt: skip
    session.add(request)
    session.flush()
    return {"id": request.id, "status": PENDING, "expires_in": call.lifetime}


def _lock_key(owner: str) -> int:
    """A 63-bit number for the organization's advisory lock (stable across processes, unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(f"approvals:{owner}".encode()).digest()[:8], "big") >> 1


def submit(session: Session, organization_id: str | None, request: Mapping[str, Any]) -> dict[str, Any]:
    """What an admin decided of a call (`request`: exposition, tool, digest, caller, question, lifetime) of
    `organization_id`'s expositions (any organization's when None: the embedded gateway): `{"id", "status",
    "expires_in"}`, the status pending, approved (the approval is used now: it serves this call only) or refused;
    a call with no live request gets a new pending one, living `lifetime` seconds."""
    call = checked(request)
    owner = _owner(session, organization_id, call.exposition)
    now = utcnow()
    found = _newest_live(session, owner, call, now)
    if found is not None and found.status == APPROVED and not _changed(session, found.id, APPROVED, {"status": USED}):
        session.expire(found)
        found = None  # another submit used this approval meanwhile: this call needs one of its own
    if found is None:
        return _new_request(session, owner, call, now)
    return {"id": found.id, "status": found.status, "expires_in": _seconds_left(found, now)}


def _iso(moment: datetime | None) -> str | None:
    return as_utc(moment).isoformat() if moment is not None else None


def _item(request: ApprovalRequest, exposition_name: str | None, now: datetime) -> dict[str, Any]:
    return {
        "id": request.id,
        "exposition": request.exposition_id,
        "exposition_name": exposition_name,
        "tool": request.tool,
        "caller": request.caller,
        "question": request.question,
        "status": request.status,
        "expired": as_utc(request.expires_at) <= now,
        "created_at": _iso(request.created_at),
        "expires_at": _iso(request.expires_at),
        "decided_by": request.decided_by,
        "decided_at": _iso(request.decided_at),
    }


def listed(session: Session, organization_id: str, status: str | None = PENDING) -> list[dict[str, Any]]:
    """The organization's requests with this status (None: all), newest first; pending ones only while they live."""
    if status is not None and status not in STATUSES:
        raise Invalid(f"status is one of {', '.join(STATUSES)}, or none for all", field="status")
    now = utcnow()
    query = (
        select(ApprovalRequest, Exposition.name)
        .join(Exposition, Exposition.id == ApprovalRequest.exposition_id)
        .where(ApprovalRequest.organization_id == organization_id)
    )
    if status is not None:
        query = query.where(ApprovalRequest.status == status)
    if status == PENDING:
        query = query.where(ApprovalRequest.expires_at > now)
    query = query.order_by(ApprovalRequest.created_at.desc(), ApprovalRequest.id.desc()).limit(MAX_LISTED)
    return [_item(request, name, now) for request, name in session.execute(query)]


def decide(session: Session, organization_id: str, approval_id: str, approve: bool, by: str) -> dict[str, Any]:
    """Approve or refuse a pending request that has not expired, as `by` (who decides); Conflict saying why not
    otherwise (decided already, used, expired), NotFound when the organization has no such request."""
    found = get_owned(session, ApprovalRequest, organization_id, approval_id, "approval request")
    now = utcnow()
    if found.status != PENDING:
        raise Conflict(f"approval request {approval_id!r} is {found.status} already: only a pending one is decided")
    if as_utc(found.expires_at) <= now:
        raise Conflict(f"approval request {approval_id!r} has expired: the caller makes the call again to ask anew")
    decision: dict[str, Any] = {"status": APPROVED if approve else REFUSED, "decided_by": by[:254], "decided_at": now}
    if approve:  # the caller gets the request's whole lifetime to use the approval, however late it came
        decision["expires_at"] = now + (as_utc(found.expires_at) - as_utc(found.created_at))
    if not _changed(session, found.id, PENDING, decision):
        raise Conflict(f"approval request {approval_id!r} was decided meanwhile by someone else")
    session.expire(found)
    exposition_name = session.scalar(select(Exposition.name).where(Exposition.id == found.exposition_id))
    return _item(found, exposition_name, now)
