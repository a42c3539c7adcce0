"""The revisions gateways follow: every change appends one, and waiters are woken.

Within one process a waiter is woken as soon as the changing transaction commits;
across control-plane replicas (PostgreSQL), waiters also re-read the newest
revision every `POLL_SECONDS`, so a change made elsewhere arrives within that.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from apimcp.control.models import Change

POLL_SECONDS = 0.5


_RECORDED = "apimcp.change_recorded"
_LOCKED = "apimcp.change_lock"
_LOCK_KEY = int.from_bytes(hashlib.blake2b(b"apimcp.changes", digest_size=8).digest(), "big", signed=True)


def record(session: Session, organization_id: str, kind: str, object_id: str) -> None:
    _in_commit_order(session, organization_id)
    session.add(Change(organization_id=organization_id, kind=kind, object_id=object_id))
    session.info[_RECORDED] = True


def _in_commit_order(session: Session, organization_id: str) -> None:
    """Make revisions follow the order their transactions commit in. A revision is numbered when its row is written,
    not when it commits: on PostgreSQL, a transaction numbered 4 that committed after one numbered 5 was never
    announced (a gateway that had read revision 5 waits for more than 5). One lock, held until commit, orders
    them: one for every organization, as the embedded gateway follows them all (`latest(session)`), and changes are
    an administrator's pace. SQLite already lets one transaction write at a time."""
    if session.get_bind().dialect.name != "postgresql":
        return
    session.connection()  # begins the transaction, if need be
    transaction = session.get_transaction()
    if session.info.get(_LOCKED) is transaction:  # a lock lasts as long as its transaction
        return
    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
    session.info[_LOCKED] = transaction


def recorded(session: Session) -> bool:
    """Whether `session` recorded a change since this was last asked (so only those commits wake gateways)."""
    return bool(session.info.pop(_RECORDED, False))


def latest(session: Session, organization_id: str | None = None) -> int:
    query = select(func.max(Change.revision))
    if organization_id is not None:
        query = query.where(Change.organization_id == organization_id)
    return session.scalar(query) or 0


class ChangeSignal:
    """Wakes every waiter (in any event loop) when a change is committed in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._generation = 0
        self.closed = False

    @property
    def generation(self) -> int:
        """How many notifications so far: read it before checking for news, pass it to `wait`."""
        return self._generation

    def notify(self) -> None:
        with self._lock:
            self._generation += 1
            waiters = list(self._waiters)
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def close(self) -> None:
        """The server is stopping: wake every waiter, and make later waits return at once."""
        self.closed = True
        self.notify()

    async def wait(self, seconds: float, seen: int | None = None) -> None:
        """Return when notified or after `seconds`, whichever comes first.

        With `seen` (a `generation` read earlier), return at once if a notification came since,
        so that a commit between checking the store and starting to wait is not missed.
        """
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            if self.closed or (seen is not None and seen != self._generation):
                return
            self._waiters.add(entry)
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.discard(entry)
