"""A JSON-RPC batch charged to an exposition's rate limits like the requests it carries.

The door (`gateway/app.py`) spends one token per HTTP request, but a 2025-03-26 batch carries up to
`max_batch_messages` messages in one, each a call the backend serves. So the door puts a `BatchRates` in the
scope (`protocol/batch_allowance.py`), and the endpoint asks it before the batch runs: the door's token paid
for the first message, each further one spends from the same buckets as a request would, and those beyond
what they hold get the 429's JSON-RPC error each (who refused, when to come back), heard of by the route's
door observers once for the batch, with how many they were.
"""

from __future__ import annotations

from collections.abc import Callable

from apimcp.protocol.batch_allowance import Allowance
from apimcp.protocol.errors import SERVER_BUSY
from apimcp.ratelimit.limiter import RateLimiter, Refused


class BatchRates:
    """The batch allowance of one admitted request: its caller's key and the route's limiter."""

    __slots__ = ("_exposition", "_key", "_limiter", "_refused")

    def __init__(
        self, limiter: RateLimiter, key: str, exposition: str, refused: Callable[[Refused, int], None]
    ) -> None:
        self._limiter = limiter
        self._key = key
        self._exposition = exposition
        self._refused = refused
        """Told of each batch some messages of which were refused: whose limit, and how many messages."""

    async def __call__(self, messages: int) -> Allowance:
        further = messages - 1  # the first is the request the door let in
        allowed, refused = await self._limiter.admit(self._key, further)
        if refused is None:
            return Allowance(messages)
        self._refused(refused, further - allowed)
        return Allowance(1 + allowed, SERVER_BUSY, refused.message(self._exposition), refused.data)
