"""Traffic as gateways report it: checked, added up by exposition, method, tool and minute, rolled up into hours
once `MINUTES_KEPT_SECONDS` old, dropped after `HOURS_KEPT_SECONDS`; read back as the figures of a window.

A gateway reports only for expositions of its own organization (an embedded gateway serves them all); rows naming
another's exposition, or none that exists, are dropped. Reports are bounded (`MAX_ROWS` rows of fixed shape), and
rows are kept per minute and tool, whatever the number of requests behind them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

from sqlalchemy import delete, false, func, select, update
from sqlalchemy.orm import Session

from apimcp.control.errors import Invalid
from apimcp.control.models import Exposition, Gateway, TrafficCount, as_utc, utcnow
from apimcp.traffic.histogram import SIZE, add_into, empty
from apimcp.traffic.tally import METHODS, OTHER

MAX_ROWS = 1000
MAX_OUTCOMES = 8
MINUTE, HOUR = 60, 3600
MINUTES_KEPT_SECONDS = 3 * HOUR
"""Past this, a minute's rows are added into their hour's."""
HOURS_KEPT_SECONDS = 31 * 24 * HOUR
ROLLUP_EVERY_SECONDS = 300.0
EARLIEST_SECONDS = 24 * HOUR
"""Counts of minutes older than this when reported are dropped (a gateway long cut off tells old news)."""

_last_rollup = 0.0

Key = tuple[str, str, str, str, datetime, int]


@dataclass(slots=True)
class Figures:
    """Counts added up: of one key, a window, a tool or a moment."""

    calls: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    latency: list[int] = field(default_factory=empty)
    backend: list[int] = field(default_factory=empty)

    def add(self, calls: int, outcomes: Mapping[str, int], latency: Sequence[int], backend: Sequence[int]) -> None:
        self.calls += calls
        for outcome, count in outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        add_into(self.latency, latency)
        add_into(self.backend, backend)

    def add_row(self, row: TrafficCount) -> None:
        self.add(row.calls, row.outcomes, row.latency, row.backend)


def _counts(value: Any, name: str) -> list[int]:
    if not isinstance(value, list) or len(value) != SIZE or not all(_count(v) for v in value):
        raise Invalid(f"each row's {name} is a list of {SIZE} counts", field="rows")
    return value


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def _checked(row: Mapping[str, Any]) -> tuple[str, str, str, int, int, dict[str, int], list[int], list[int]]:
    exposition_id, method, tool, start = row.get("exposition_id"), row.get("method"), row.get("tool"), row.get("start")
    if not isinstance(exposition_id, str) or not 0 < len(exposition_id) <= 64:
        raise Invalid("each row names an exposition_id", field="rows")
    if not isinstance(method, str) or (method not in METHODS and method != OTHER):
        raise Invalid("each row's method is one a gateway counts", field="rows")
    if not isinstance(tool, str) or len(tool) > 200 or (tool and method != "tools/call"):
        raise Invalid("each row's tool is a name of at most 200 characters, for tools/call only", field="rows")
    if not tool.isprintable():  # a NUL, which PostgreSQL keeps in no text, or another control character
        tool = OTHER
    if not _count(start) or start % MINUTE:
        raise Invalid("each row starts on a minute (seconds since the epoch)", field="rows")
    calls, outcomes = row.get("calls"), row.get("outcomes")
    if not _count(calls):
        raise Invalid("each row counts its calls", field="rows")
    if not isinstance(outcomes, dict) or len(outcomes) > MAX_OUTCOMES:
        raise Invalid(f"each row's outcomes map at most {MAX_OUTCOMES} names to counts", field="rows")
    for outcome, count in outcomes.items():
        if not isinstance(outcome, str) or len(outcome) > 32 or not _count(count):
            raise Invalid(f"each row's outcomes map at most {MAX_OUTCOMES} names to counts", field="rows")
    return (exposition_id, method, tool, start, calls, outcomes, _counts(row.get("latency"), "latency"),
            _counts(row.get("backend"), "backend"))  # fmt: skip


def record(
    session: Session, organization_id: str | None, gateway_name: str, revision: int, rows: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """Add up the rows of `organization_id`'s expositions (any organization's when None), and note the revision
    the gateway serves; (kept, dropped). Every row is checked before any is kept."""
    if len(rows) > MAX_ROWS:
        raise Invalid(f"a gateway reports at most {MAX_ROWS} rows at once", field="rows")
    checked = [_checked(row) for row in rows]
    owners = dict(
        session.execute(
            select(Exposition.id, Exposition.organization_id).where(Exposition.id.in_({row[0] for row in checked}))
        ).all()
    )
    earliest = time.time() - EARLIEST_SECONDS
    added: dict[Key, Figures] = {}
    dropped = 0
    for exposition_id, method, tool, start, calls, outcomes, latency, backend in checked:
        owner = owners.get(exposition_id)
        if owner is None or (organization_id is not None and owner != organization_id) or start < earliest:
            dropped += 1
            continue
        key = (owner, exposition_id, method, tool, datetime.fromtimestamp(start, UTC), MINUTE)
        added.setdefault(key, Figures()).add(calls, outcomes, latency, backend)
    _add(session, added, MINUTE)
    _note_revision(session, {key[0] for key in added} | ({organization_id} if organization_id else set()),
                   gateway_name, revision)  # fmt: skip
    roll_up_now_and_then(session)
    return len(checked) - dropped, dropped


def _add(session: Session, added: Mapping[Key, Figures], seconds: int) -> None:
    """Each key's figures added to its row (made when there is none), one writer at a time (`_one_writer`)."""
    if not added:
        return
    _one_writer(session)
    starts = {key[4] for key in added}
    found = session.scalars(
        select(TrafficCount).where(
            TrafficCount.organization_id.in_({key[0] for key in added}),
            TrafficCount.start.in_(starts),
            TrafficCount.exposition_id.in_({key[1] for key in added}),
            TrafficCount.seconds == seconds,
        )
    )
    rows = {(r.organization_id, r.exposition_id, r.method, r.tool, as_utc(r.start), r.seconds): r for r in found}
    for key, figures in added.items():
        row = rows.get(key)
        if row is None:
            organization_id, exposition_id, method, tool, start, seconds = key
            session.add(
                TrafficCount(
                    organization_id=organization_id, exposition_id=exposition_id, method=method, tool=tool,
                    start=start, seconds=seconds, calls=figures.calls, outcomes=figures.outcomes,
                    latency=figures.latency, backend=figures.backend,
                )
            )  # fmt: skip
            continue
        total = Figures()
        total.add_row(row)
        total.add(figures.calls, figures.outcomes, figures.latency, figures.backend)
        row.calls, row.outcomes, row.latency, row.backend = total.calls, total.outcomes, total.latency, total.backend
    session.flush()


_WRITER_LOCK = int.from_bytes(hashlib.sha256(b"apimcp traffic counts").digest()[:8], "big") >> 1


def _one_writer(session: Session) -> None:
    """Until this transaction ends, no other adds to the counts: a row is read, added to and written back, and
    two reports read together lost one's counts (or both inserted a row, and one failed). On PostgreSQL an
    advisory lock (every control plane replica's); on SQLite, a write begun now takes the database's write lock,
    which the others wait for."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_advisory_xact_lock(_WRITER_LOCK)))
    else:
        session.execute(update(TrafficCount).where(false()).values(calls=TrafficCount.calls))


def _note_revision(session: Session, organizations: Iterable[str], gateway_name: str, revision: int) -> None:
    for gateway in session.scalars(
        select(Gateway).where(Gateway.organization_id.in_(list(organizations)), Gateway.name == gateway_name)
    ):
        gateway.revision = revision
        gateway.last_seen = utcnow()


def roll_up_now_and_then(session: Session) -> None:
    global _last_rollup  # noqa: PLW0603 - once every few minutes per process is enough, and harmless if twice
    if time.monotonic() - _last_rollup < ROLLUP_EVERY_SECONDS:
        return
    _last_rollup = time.monotonic()
    roll_up(session, utcnow())


def roll_up(session: Session, now: datetime) -> int:
    """Minutes older than `MINUTES_KEPT_SECONDS` added into their hours, hours older than `HOURS_KEPT_SECONDS`
    dropped; how many minute rows were rolled up."""
    session.execute(delete(TrafficCount).where(
        TrafficCount.seconds == HOUR, TrafficCount.start < now - timedelta(seconds=HOURS_KEPT_SECONDS)
    ))  # fmt: skip
    old = list(
        session.scalars(
            select(TrafficCount).where(
                TrafficCount.seconds == MINUTE,
                TrafficCount.start < (now - timedelta(seconds=MINUTES_KEPT_SECONDS)).replace(minute=0, second=0),
            )
        )
    )
    hours: dict[Key, Figures] = {}
    for row in old:
        start = as_utc(row.start).replace(minute=0, second=0, microsecond=0)
        key = (row.organization_id, row.exposition_id, row.method, row.tool, start, HOUR)
        hours.setdefault(key, Figures()).add_row(row)
        session.delete(row)
    session.flush()
    _add(session, hours, HOUR)
    return len(old)
