"""The control plane's parts wired together: the store, the secret keys, the change signal, the limits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.changes import ChangeSignal
from apimcp.control.crypto import KeySet
from apimcp.control.limits import ApiLimits
from apimcp.control.store import Store


@dataclass
class ControlPlane:
    store: Store
    keys: KeySet
    signal: ChangeSignal = field(default_factory=ChangeSignal)
    limits: ApiLimits = field(default_factory=ApiLimits)

    def __post_init__(self) -> None:
        # Waiting gateways learn of a change as soon as the transaction that made it commits.
        self.store.on_commit(self._committed)

    def _committed(self, session: Session) -> None:
        if changes.recorded(session):  # reads and heartbeats commit too; they must not wake anyone
            self.signal.notify()

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.store.session() as session:
            yield session
