"""The figures of a window of traffic: totals, a series to draw, the busiest and the failing tools, and the
gateways with their health and the revision each serves. Read from the minute rows (and the hour rows, for what
was rolled up), for the whole organization, one exposition or one tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.domain import gateways
from apimcp.control.domain.traffic import HOUR, MINUTE, Figures
from apimcp.control.errors import Invalid
from apimcp.control.models import Exposition, TrafficCount, as_utc, utcnow
from apimcp.traffic.histogram import quantile

WINDOWS = {"hour": (HOUR, MINUTE), "day": (24 * HOUR, HOUR)}
"""Each window's length and the step of its series, in seconds."""
NOT_ERRORS = frozenset({"input_required", "cancelled"})
"""Outcomes other than success that are not failures: a round asking for input, a client that stopped waiting."""
LISTED_TOOLS = 10
HEALTHY_SECONDS = 60.0
"""A gateway heard from within this is up (its long polls say so every 25 s)."""


@dataclass(frozen=True, slots=True)
class Scope:
    organization_id: str
    exposition_id: str | None = None
    tool: str | None = None


def errors_of(figures: Figures) -> int:
    return sum(count for outcome, count in figures.outcomes.items() if outcome not in NOT_ERRORS)


def _described(figures: Figures) -> dict[str, Any]:
    return {
        "calls": figures.calls,
        "errors": errors_of(figures),
        "outcomes": dict(sorted(figures.outcomes.items())),
        "p50_ms": quantile(figures.latency, 0.5),
        "p95_ms": quantile(figures.latency, 0.95),
        "backend_p50_ms": quantile(figures.backend, 0.5),
        "backend_p95_ms": quantile(figures.backend, 0.95),
    }


def _rows(session: Session, scope: Scope, since: datetime) -> list[TrafficCount]:
    query = select(TrafficCount).where(
        TrafficCount.organization_id == scope.organization_id,
        TrafficCount.start >= since - timedelta(seconds=HOUR),  # an hour row covering part of the window
    )
    if scope.exposition_id is not None:
        query = query.where(TrafficCount.exposition_id == scope.exposition_id)
    if scope.tool is not None:
        query = query.where(TrafficCount.method == "tools/call", TrafficCount.tool == scope.tool)
    return [row for row in session.scalars(query) if as_utc(row.start) + timedelta(seconds=row.seconds) > since]


def window(session: Session, scope: Scope, name: str, now: datetime | None = None) -> dict[str, Any]:
    """The figures of the last hour or day (`name`) in `scope` (whose exposition the caller found in its
    organization)."""
    if name not in WINDOWS:
        raise Invalid(f"window is one of {', '.join(WINDOWS)}", field="window")
    length, step = WINDOWS[name]
    now = now or utcnow()
    end = int(now.timestamp()) // step * step + step
    start = end - length
    since = datetime.fromtimestamp(start, now.tzinfo)
    rows = _rows(session, scope, since)
    total, moments = Figures(), {moment: Figures() for moment in range(start, end, step)}
    tools: dict[tuple[str, str], Figures] = {}
    expositions: dict[str, Figures] = {}
    methods: dict[str, Figures] = {}
    for row in rows:
        total.add_row(row)
        moment = max(int(as_utc(row.start).timestamp()) // step * step, start)
        moments.setdefault(moment, Figures()).add_row(row)
        expositions.setdefault(row.exposition_id, Figures()).add_row(row)
        methods.setdefault(row.method, Figures()).add_row(row)
        if row.tool:
            tools.setdefault((row.exposition_id, row.tool), Figures()).add_row(row)
    names = _exposition_names(session, scope.organization_id, expositions)
    return {
        "window": name,
        "start": start,
        "end": end,
        "step_seconds": step,
        "scope": {"exposition_id": scope.exposition_id, "tool": scope.tool},
        "totals": _described(total),
        "series": [{"t": moment, **_described(figures)} for moment, figures in sorted(moments.items())],
        "busiest": _tools(tools, names, lambda figures: figures.calls),
        "failing": _tools(tools, names, errors_of),
        "expositions": sorted(
            (
                {"exposition_id": key, "exposition": names.get(key), **_described(value)}
                for key, value in expositions.items()
            ),
            key=lambda entry: -entry["calls"],
        ),
        "methods": {method: _described(figures) for method, figures in sorted(methods.items())},
        "gateways": gateway_health(session, scope.organization_id, now),
    }


def _exposition_names(session: Session, organization_id: str, ids: Iterable[str]) -> dict[str, str | None]:
    found = session.execute(
        select(Exposition.id, Exposition.name).where(
            Exposition.organization_id == organization_id, Exposition.id.in_(list(ids))
        )
    )
    return dict(found.all())


def _tools(
    tools: Mapping[tuple[str, str], Figures], names: Mapping[str, str | None], measure: Any
) -> list[dict[str, Any]]:
    ranked = sorted(((measure(f), key) for key, f in tools.items() if measure(f) > 0), key=lambda e: (-e[0], e[1]))
    return [
        {"exposition_id": exposition_id, "exposition": names.get(exposition_id), "tool": tool,
         **_described(tools[(exposition_id, tool)])}
        for _, (exposition_id, tool) in ranked[:LISTED_TOOLS]
    ]  # fmt: skip


def gateway_health(session: Session, organization_id: str, now: datetime) -> list[dict[str, Any]]:
    latest = changes.latest(session, organization_id)
    listed = []
    for gateway in gateways.listed(session, organization_id):
        silent = (now - as_utc(gateway.last_seen)).total_seconds()
        listed.append({
            "name": gateway.name,
            "last_seen": as_utc(gateway.last_seen).isoformat(),
            "silent_seconds": round(max(silent, 0.0), 1),
            "healthy": silent <= HEALTHY_SECONDS,
            "revision": gateway.revision,
            "latest_revision": latest,
            "up_to_date": gateway.revision >= latest,
        })  # fmt: skip
    return listed
