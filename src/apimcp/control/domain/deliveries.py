"""Gateways' reports kept once: a report whose answer never reached its gateway (a timeout after the commit) is
sent again with the same id, and adds nothing the second time.

The id is noted in the transaction that keeps what the report holds, so either both are kept or neither is. Two
deliveries of one report at the same moment (the first still being written when its gateway gave up on it) meet
at the id's uniqueness: the second fails, and its gateway sends it again later, when the first is found.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import delete
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
    if session.get(DeliveredReport, report) is not None:
        return False
    session.add(DeliveredReport(report=report, at=datetime.now(UTC)))
    session.flush()  # in this transaction: a savepoint would commit on its own on SQLite (pysqlite begins lazily)
    _prune_now_and_then(session)
    return True


def _prune_now_and_then(session: Session) -> None:
    now = time.monotonic()
    if now - _pruned[0] < PRUNE_EVERY_SECONDS:
        return
    _pruned[0] = now
    oldest = datetime.fromtimestamp(time.time() - KEPT_SECONDS, UTC)
    session.execute(delete(DeliveredReport).where(DeliveredReport.at < oldest))
