"""Migration 0009: the audit events already kept are told apart, refusals from the others, and back on downgrade."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
from sqlalchemy import text

from apimcp.control.store import Store

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WHERE = {"time": 1.0, "exposition_id": "exp"}
EVENTS = {
    "answered": {**WHERE, "action": "tools/call", "outcome": "success"},
    "refused_401": {**WHERE, "action": "authentication", "outcome": "failure", "status": 401},
    "refused_429": {**WHERE, "action": "tools/call", "outcome": "refused", "status": 429},
    "odd_status": {**WHERE, "action": "ping", "outcome": "success", "status": "401"},
}


def test_the_events_already_kept_are_told_apart(database_url: str) -> None:
    store = Store(database_url)
    try:
        store.migrate_to("0008")
        with store.engine.begin() as connection:
            for name, event in EVENTS.items():
                connection.execute(
                    text("INSERT INTO audit_events (organization_id, exposition_id, at, event) "
                         "VALUES ('org', :name, :now, :event)"),
                    {"name": name, "now": NOW, "event": orjson.dumps(event).decode()},
                )  # fmt: skip
        store.migrate_to("0009")
        with store.engine.connect() as connection:
            rows = connection.execute(text("SELECT exposition_id, refusal FROM audit_events ORDER BY id")).all()
        assert [(name, bool(refusal)) for name, refusal in rows] == [
            ("answered", False), ("refused_401", True), ("refused_429", True), ("odd_status", False),
        ]  # fmt: skip
        store.migrate_to("0008", down=True)
        with store.engine.connect() as connection:
            assert connection.execute(text("SELECT count(*) FROM audit_events")).scalar() == len(EVENTS)
    finally:
        store.dispose()
