"""Gateways' reports kept once: a report whose answer never reached its gateway (a timeout after the commit) is
sent again with the same id, and adds nothing the second time.

The id is noted in the transaction that keeps what the report holds, so either both are kept or neither is. Two
deliveries of one report at the same moment (the first still being written when its gateway gave up on it) meet
at the id's uniqueness: the second's insert waits for the first's transaction, then adds nothing if it committed,
or is the first delivery if it rolled back.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from apimcp.control.models import DeliveredReport

KEPT_SECONDS = 86_400.0
"""How long an id is remembered: far longer than any gateway tries a report again (its rows are a day old then)."""
PRUNE_EVERY_SECONDS = 600.0
_pruned = [0.0]


def first_delivery(session: Session, report: str | None) -> bool:
    """Whether `report` arrives for the first time (its id now noted); a report without an id (a gateway of before)
    always does."""
    if report is None:
        return True
    # One statement, not a read then an insert: a read misses a delivery still being written, and the insert after
    # it then fails on the id once that delivery commits.
    insert = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = insert(DeliveredReport).values(report=report, at=datetime.now(UTC)).on_conflict_do_nothing()
    if session.execute(statement.returning(DeliveredReport.report)).first() is None:
        return False
    _prune_now_and_then(session)
    return True


def _prune_now_and_then(session: Session) -> None:
    now = time.monotonic()
    if now - _pruned[0] < PRUNE_EVERY_SECONDS:
        return
    _pruned[0] = now
    oldest = datetime.fromtimestamp(time.time() - KEPT_SECONDS, UTC)
    session.execute(delete(DeliveredReport).where(DeliveredReport.at < oldest))
