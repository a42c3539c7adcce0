"""Discovery reports as the control plane makes them: on the import workers (a report of a large API takes a
minute of CPU), one at a time, and kept for the tools they were made of, so that asking again costs nothing."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final

KEPT: Final = 16


class ReportsBusy(Exception):
    """Another report is being made; the message says to come back."""


class Reports:
    """The reports made last (at most `KEPT`), and the one being made."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._making = threading.Lock()
        self._kept: OrderedDict[Hashable, dict[str, Any]] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The report for `key`, made by `make` unless kept; raises ReportsBusy while another one is made."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
        if not self._making.acquire(blocking=False):
            raise ReportsBusy("another discovery report is being made: try again in a minute")
        try:
            report = make()
        finally:
            self._making.release()
        with self._lock:
            self._kept[key] = report
            while len(self._kept) > KEPT:
                self._kept.popitem(last=False)
        return report
