"""One exposition's rate limits applied to a request, to the messages of a JSON-RPC batch (each counts as a
request would), or to a call a script makes into it: may it go on, or when should it come back?

A caller is counted by `apimcp.protocol.caller.caller_key` (the principal, else the client's host), as the tasks
one caller keeps are.

The caller's bucket is spent first, then the exposition's: a caller over their own limit is refused
without spending from the exposition's, so one client flooding cannot use up everyone's allowance. A store
that cannot be reached lets requests through and says so in the log: a rate limit protects a backend, it
must not take the gateway down.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Literal

from apimcp.ratelimit.buckets import BucketStore
from apimcp.ratelimit.policy import RateLimits, retry_after

log = logging.getLogger("apimcp.ratelimit")
_SAY_EVERY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Refused:
    """A request or call beyond a limit: whose limit it was, and the seconds after which it may be tried again."""

    limit: Literal["caller", "exposition"]
    seconds: float

    @property
    def reason(self) -> str:
        """How an audit trail and the metrics name the refusal: `caller_rate_limit` or `exposition_rate_limit`."""
        return f"{self.limit}_rate_limit"

    @property
    def retry_after(self) -> int:
        """Whole seconds, as `Retry-After` says them."""
        return retry_after(self.seconds)

    def message(self, exposition: str) -> str:
        """What the refused client (or script) is told, naming whose limit it reached: the door's 429 and a
        script's refused call say the same."""
        if self.limit == "caller":
            whose = f"Rate limit per caller of exposition '{exposition}' reached"
        else:
            whose = f"Rate limit of exposition '{exposition}' reached (all its callers together)"
        return f"{whose}: try again in {self.retry_after} s"

    @property
    def data(self) -> dict[str, int | str]:
        """The JSON-RPC error's `data`: when to come back, and whose limit it was."""
        return {"retryAfter": self.retry_after, "reason": self.reason}


class RateLimiter:
    def __init__(self, exposition_id: str, limits: RateLimits, buckets: BucketStore) -> None:
        self._exposition_key = f"e:{exposition_id}"
        self._caller_prefix = f"c:{exposition_id}:"
        self.limits = limits
        self._buckets = buckets
        self._said_at = -math.inf

    async def check(self, caller: str) -> Refused | None:
        """None when the request may go on, else which limit it is beyond and when to come back."""
        _, refused = await self.admit(caller, 1)
        return refused

    async def admit(self, caller: str, count: int) -> tuple[int, Refused | None]:
        """How many of `count` requests (the messages of a JSON-RPC batch) may go on, the first ones, each spending
        a token as one request does; and when not all may, which limit refused the first of the others and when
        to come back. Each bucket is spent in one step, the caller's first: only what it allows is asked of the
        exposition's."""
        allowed, refused = count, None
        try:
            if (limit := self.limits.caller) is not None:
                spent, waiting = await self._buckets.take_up_to(
                    self._caller_prefix + caller, limit.rate, limit.burst, allowed
                )
                if spent < allowed:
                    allowed, refused = spent, Refused("caller", waiting)
            if (limit := self.limits.exposition) is not None and allowed > 0:
                spent, waiting = await self._buckets.take_up_to(self._exposition_key, limit.rate, limit.burst, allowed)
                if spent < allowed:
                    allowed, refused = spent, Refused("exposition", waiting)
        except Exception as exc:  # a store that is away must not refuse everyone
            now = time.monotonic()
            if now - self._said_at >= _SAY_EVERY_SECONDS:
                self._said_at = now
                log.warning("rate limits not applied: their store cannot be reached (%s)", type(exc).__name__)
            return count, None
        return allowed, refused
