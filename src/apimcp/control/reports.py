"""Discovery reports as the control plane makes them: on the import workers (a report of a large API takes a
minute of CPU), one at a time, and kept for the tools they were made of, so that asking again costs nothing.

Organizations share the one report being made and the room to keep them, so neither is first come, first served
for ever: each keeps its own last reports (one asking for many evicts only its own, until all together pass
`KEPT_IN_ALL`), and an organization whose report kept another one waiting yields the next turn to it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final

KEPT: Final = 16
"""Reports kept per organization."""
KEPT_IN_ALL: Final = 256
WAITING_SECONDS: Final = 300.0
"""How long an organization turned away is remembered as waiting for its turn (it may never come back)."""
MAX_WAITING: Final = 1024


class ReportsBusy(Exception):
    """Another report is being made, or another organization's goes first; the message says to come back."""


class Reports:
    """The reports made last (at most `KEPT` per organization), and the one being made."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._making = threading.Lock()
        self._kept: OrderedDict[tuple[Hashable, Hashable], dict[str, Any]] = OrderedDict()
        self._waiting: OrderedDict[Hashable, float] = OrderedDict()
        """Organizations turned away while another's report was made, and when."""
        self._yielding: dict[Hashable, tuple[float, frozenset[Hashable]]] = {}
        """Organizations whose report kept others waiting: until when they let those go first, and which."""

    def get(self, owner: Hashable, key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """`owner`'s report for `key`, made by `make` unless kept; raises ReportsBusy while another one is made, or
        while `owner` lets an organization it kept waiting go first."""
        with self._lock:
            kept = self._kept.get((owner, key))
            if kept is not None:
                self._kept.move_to_end((owner, key))
                return kept
            self._refuse_if_yielding(owner)
        if not self._making.acquire(blocking=False):
            self._turned_away(owner)
            raise ReportsBusy("another discovery report is being made: try again in a minute")
        started = self._clock()
        with self._lock:
            self._waiting.pop(owner, None)
            # its turn has come: whoever kept it waiting owes it nothing more (a third's turn changes nothing)
            self._yielding = {
                who: (until, kept)
                for who, (until, kept) in self._yielding.items()
                if owner not in kept and started < until
            }
        try:
            report = make()
        finally:
            self._making.release()
            self._made(owner, self._clock() - started)
        with self._lock:
            self._keep(owner, key, report)
        return report

    def _refuse_if_yielding(self, owner: Hashable) -> None:
        yielding = self._yielding.get(owner)
        if yielding is None:
            return
        until, kept = yielding
        if self._clock() < until and self._waiting_among(kept):
            raise ReportsBusy("another organization's discovery report goes first: try again in a minute")

    def _turned_away(self, owner: Hashable) -> None:
        with self._lock:
            self._waiting[owner] = self._clock()
            self._waiting.move_to_end(owner)
            while len(self._waiting) > MAX_WAITING:
                self._waiting.popitem(last=False)

    def _made(self, owner: Hashable, took: float) -> None:
        """After `owner`'s report (`took` seconds): if others were turned away meanwhile, they go first, for as
        long as it took."""
        with self._lock:
            now = self._clock()
            kept = frozenset(
                who for who, since in self._waiting.items() if who != owner and now - since < WAITING_SECONDS
            )
            if kept:
                self._yielding[owner] = (now + took, kept)

    def _waiting_among(self, organizations: frozenset[Hashable]) -> bool:
        """Whether one of `organizations` was turned away lately (and may still come back)."""
        now = self._clock()
        return any(who in organizations and now - since < WAITING_SECONDS for who, since in self._waiting.items())

    def _keep(self, owner: Hashable, key: Hashable, report: dict[str, Any]) -> None:
        self._kept[owner, key] = report
        own = [kept for kept in self._kept if kept[0] == owner]
        for oldest in own[: max(0, len(own) - KEPT)]:
            del self._kept[oldest]
        while len(self._kept) > KEPT_IN_ALL:
            self._kept.popitem(last=False)
