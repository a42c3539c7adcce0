"""Revisions in the order their transactions commit: a gateway that read revision R is told of every change
committed after it (`control.changes`)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait

import pytest

from apimcp.control import changes
from apimcp.control.plane import ControlPlane


def _change(plane: ControlPlane, organization: str, started: threading.Event | None = None) -> int:
    with plane.session() as session:
        if started is not None:
            started.set()
        changes.record(session, organization, "plan", "p")
        session.flush()
        return changes.latest(session, organization)


@pytest.mark.parametrize("organization", ["org-1", "org-2"])  # the embedded gateway follows every organization
def test_a_change_numbered_first_is_committed_before_a_later_one(plane: ControlPlane, organization: str) -> None:
    """The finding: on PostgreSQL, a transaction numbered 4 that committed after one numbered 5 was never announced:
    a gateway that had read revision 5 waited for more than 5."""
    if plane.store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite lets one transaction write at a time")
    started = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        with plane.session() as slow:
            changes.record(slow, "org-1", "plan", "p1")
            slow.flush()
            first = changes.latest(slow, "org-1")
            later = pool.submit(_change, plane, organization, started)
            assert started.wait(10)
            finished, _ = wait([later], timeout=1.0)
            assert not finished  # numbered only once the open transaction ends
        assert later.result(10) > first
