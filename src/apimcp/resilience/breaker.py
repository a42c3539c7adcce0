"""A circuit breaker for one backend: after `failures` consecutive failures of the backend itself (unreachable,
or unable to answer now: `Failure.transient`), calls fail at once for `open_seconds`; then one call is let
through to probe it, and its success closes the breaker (its failure opens it again). Answers that are the
caller's problem (4xx, invalid arguments) say the backend is up, and count as successes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from apimcp.resilience.settings import Breaker

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    __slots__ = ("_clock", "_failures", "_opened_at", "_probing", "settings")

    def __init__(self, settings: Breaker, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> State:
        if self._opened_at is None:
            return "closed"
        return "half_open" if self._clock() - self._opened_at >= self.settings.open_seconds else "open"

    def admit(self) -> float | None:
        """None when a call may go (the one probe once the breaker has been open long enough), else the seconds
        until the next probe."""
        if self._opened_at is None:
            return None
        waited = self._clock() - self._opened_at
        if waited < self.settings.open_seconds:
            return self.settings.open_seconds - waited
        if self._probing:  # one probe at a time; the others fail at once
            return 1.0
        self._probing = True
        return None

    def succeeded(self) -> None:
        self._failures, self._opened_at, self._probing = 0, None, False

    def failed(self) -> bool:
        """Count a failure of the backend; True when it opens the breaker (now, or again after a probe)."""
        self._failures += 1
        if self._probing or (self._opened_at is None and self._failures >= self.settings.failures):
            self._opened_at, self._probing = self._clock(), False
            return True
        return False

    def released(self) -> None:
        """The probe ended without telling either way (cancelled)."""
        self._probing = False
