"""Rate limit settings: `{exposition: {requests, per_seconds, burst}, caller: {...}}`, checked once.

A limit of `requests` per `per_seconds` is a token bucket that refills at that rate and holds `burst`
tokens (by default `requests`: a client may spend a period's allowance at once, never more). The
exposition's limit counts every request it receives; the caller's counts each caller apart (an
authenticated caller by principal, an anonymous one by client address).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_REQUESTS = 10_000_000
_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0}
_TEXT = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*(?:,\s*burst\s*=\s*(\d+)\s*)?$")
SCOPES = ("exposition", "caller")


class RateLimitError(ValueError):
    """A rate limit apimcp cannot use; the message names the field."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class RateLimit:
    requests: int
    per_seconds: float
    burst: int

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self.requests / self.per_seconds

    def as_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "per_seconds": self.per_seconds, "burst": self.burst}

    def __str__(self) -> str:
        period = {1.0: "s", 60.0: "min", 3600.0: "h"}.get(self.per_seconds, f"{self.per_seconds:g}s")
        burst = f", burst={self.burst}" if self.burst != self.requests else ""
        return f"{self.requests}/{period}{burst}"


@dataclass(frozen=True, slots=True)
class RateLimits:
    exposition: RateLimit | None = None
    caller: RateLimit | None = None

    def __bool__(self) -> bool:
        return self.exposition is not None or self.caller is not None

    def as_json(self) -> dict[str, Any] | None:
        if not self:
            return None
        return {scope: limit.as_json() for scope in SCOPES if (limit := getattr(self, scope)) is not None}


NO_LIMITS = RateLimits()


def _limit(raw: Any, where: str) -> RateLimit:
    if isinstance(raw, str):
        return parse_rate(raw, where)
    if not isinstance(raw, Mapping):
        raise RateLimitError(f"{where} is {{requests, per_seconds, burst}} or text such as 100/min", where)
    unknown = set(raw) - {"requests", "per_seconds", "burst"}
    if unknown:
        raise RateLimitError(f"{where} has unknown fields: {', '.join(sorted(unknown))}", where)
    requests, per_seconds = raw.get("requests"), raw.get("per_seconds", 1)
    burst = raw.get("burst", requests)
    if not isinstance(requests, int) or isinstance(requests, bool) or not 1 <= requests <= MAX_REQUESTS:
        raise RateLimitError(f"{where}.requests is a whole number from 1 to {MAX_REQUESTS}", f"{where}.requests")
    if not isinstance(per_seconds, int | float) or isinstance(per_seconds, bool) or not 0.001 <= per_seconds <= 86400:
        raise RateLimitError(f"{where}.per_seconds is between 0.001 and 86400", f"{where}.per_seconds")
    if not isinstance(burst, int) or isinstance(burst, bool) or not 1 <= burst <= MAX_REQUESTS:
        raise RateLimitError(f"{where}.burst is a whole number from 1 to {MAX_REQUESTS}", f"{where}.burst")
    return RateLimit(requests, float(per_seconds), burst)


def parse_rate(text: str, where: str = "rate limit") -> RateLimit:
    """`100/min`, `5/s`, `1000/10s`, `20/s, burst=40`."""
    found = _TEXT.match(text.lower())
    unit = _UNITS.get(found.group(3)) if found else None
    if found is None or unit is None:
        raise RateLimitError(f"{where}: {text!r} is not a rate such as 100/min, 5/s or 20/s,burst=40", where)
    requests = int(found.group(1))
    per_seconds = unit * int(found.group(2) or 1)
    burst = int(found.group(4)) if found.group(4) else requests
    return _limit({"requests": requests, "per_seconds": per_seconds, "burst": burst}, where)


def parse_rate_limits(raw: Any, where: str = "rate_limit") -> RateLimits:
    """The limits a plan or a configuration gives (None or {} for none)."""
    if raw is None:
        return NO_LIMITS
    if not isinstance(raw, Mapping):
        raise RateLimitError(f"{where} is {{exposition: ..., caller: ...}}", where)
    unknown = set(raw) - set(SCOPES)
    if unknown:
        raise RateLimitError(f"{where} has unknown fields: {', '.join(sorted(unknown))}", where)
    limits = {scope: _limit(raw[scope], f"{where}.{scope}") for scope in SCOPES if raw.get(scope) is not None}
    return RateLimits(**limits)


def retry_after(seconds: float) -> int:
    """Whole seconds for a Retry-After header (at least 1)."""
    return max(1, math.ceil(seconds))
