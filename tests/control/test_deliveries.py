"""A gateway's report kept once, however its deliveries meet (`control.domain.deliveries`)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select, text

from apimcp.control.domain import deliveries
from apimcp.control.models import DeliveredReport
from apimcp.control.plane import ControlPlane

REPORT = "r" * 24


def _deliver(plane: ControlPlane, started: threading.Event) -> bool:
    with plane.session() as session:
        started.set()
        return deliveries.first_delivery(session, REPORT)


def _waiting_on_a_lock(plane: ControlPlane) -> bool:
    with plane.store.engine.connect() as connection:
        query = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        waiting = connection.execute(text(query)).scalar_one()
    return bool(waiting)


def test_a_report_delivered_again_while_its_first_delivery_is_being_written_adds_nothing(plane: ControlPlane) -> None:
    """The finding: the second delivery read no id (the first was not committed yet), then its insert failed on the
    id once the first committed: a 500, and its gateway sent the report once more later."""
    postgresql = plane.store.engine.dialect.name == "postgresql"
    started = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        with plane.session() as first:
            assert deliveries.first_delivery(first, REPORT)
            second = pool.submit(_deliver, plane, started)
            assert started.wait(10)
            # the second delivery must be under way before the first commits: PostgreSQL shows it waiting on the
            # id's lock; SQLite gives no sign of a connection waiting for its write lock, so it is given time
            for _ in range(200):
                if not postgresql or _waiting_on_a_lock(plane):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the second delivery never waited on the first")
            if not postgresql:
                time.sleep(0.5)
            assert not second.done()
        assert second.result(timeout=10) is False
    with plane.session() as session:
        assert session.scalar(select(func.count()).select_from(DeliveredReport)) == 1


def test_a_report_without_an_id_is_always_a_first_delivery(plane: ControlPlane) -> None:
    with plane.session() as session:
        assert deliveries.first_delivery(session, None)
        assert deliveries.first_delivery(session, None)
        assert deliveries.first_delivery(session, REPORT)
        assert not deliveries.first_delivery(session, REPORT)
