"""A circuit breaker for one backend: after `failures` consecutive failures of the backend itself (unable to answer
now, `Failure.transient`, or never reached, `Failure.unsent`: a name that does not resolve, a TLS handshake
refused), calls fail at once for `open_seconds`; then one call is let through to probe it, and its success closes
the breaker (its failure opens it again). Answers that are the caller's problem (4xx, invalid arguments) say the
backend is up, and count as successes. While the breaker is open only the probe's outcome counts: a call let
through before it opened, ending late, says nothing of the backend now."""

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

    def admit(self) -> float | Literal["call", "probe"]:
        """`call` when a call may go, `probe` when it is the one probe let through once the breaker has been open
        long enough, else the seconds until the next probe. The call's outcome is told with what this said."""
        if self._opened_at is None:
            return "call"
        waited = self._clock() - self._opened_at
        if waited < self.settings.open_seconds:
            return self.settings.open_seconds - waited
        if self._probing:  # one probe at a time; the others fail at once
            return 1.0
        self._probing = True
        return "probe"

    def succeeded(self, probe: bool) -> bool:
        """Count a success of the backend; True when it closes the breaker (the probe's). While it is open, a call
        let through before it opened tells nothing of now."""
        if self._opened_at is not None and not probe:
            return False
        closes = self._opened_at is not None
        self._failures, self._opened_at, self._probing = 0, None, False
        return closes

    def failed(self, probe: bool) -> bool:
        """Count a failure of the backend; True when it opens the breaker (now, or again after the probe)."""
        if self._opened_at is not None:
            if not probe:
                return False  # open already: a call let through before says nothing more
            self._opened_at, self._probing = self._clock(), False
            return True
        self._failures += 1
        if self._failures >= self.settings.failures:
            self._opened_at = self._clock()
            return True
        return False

    def released(self, probe: bool) -> None:
        """A call ended without telling either way (cancelled): when it was the probe, another may go."""
        if probe:
            self._probing = False
