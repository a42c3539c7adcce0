"""A report a gateway sends the control plane (a batch of traffic counts, or of audit events: `gateway/sync.py`
sends both), kept whole with its id until it arrives.

A report whose sending failed may have been kept all the same: the control plane committed it, and its answer was
lost (a timeout). So it is sent again as it was, with the same id, before anything newer and never merged into
it: the control plane keeps a report once (`control.domain.deliveries`). At most one report waits, bounded as a
batch is; what is counted meanwhile waits where it was counted.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def new_id() -> str:
    return secrets.token_urlsafe(18)


@dataclass(frozen=True, slots=True)
class Report:
    items: list[dict[str, Any]]
    id: str = field(default_factory=new_id)


class Outbox:
    """The report waiting to be sent again, if any."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting: Report | None = None

    def next(self, take: Callable[[], list[dict[str, Any]]]) -> Report:
        """The report that waits, else a new one of what `take` takes."""
        waiting, self.waiting = self.waiting, None
        return waiting if waiting is not None else Report(take())
