"""What hears of the requests an exposition refuses at its door, before its MCP endpoint reads them.

`gateway/app.py` admits each request with the route's guard (a refusal is 401 or 403) and then its rate limits
(429). The endpoint never hears of a request refused there, so the request observers (`protocol/observe.py`)
do not either: a route's door observers do, its audit trail (the request's only event) and, when metrics are
on, its telemetry (a count by exposition and reason). The messages of a JSON-RPC batch beyond what the limits
allow (`gateway/batch_rates.py`) are refused so too: one event for the batch, saying how many.
"""

from __future__ import annotations

from typing import Protocol


class DoorObserver(Protocol):
    """Called on the event loop, in the request's task; must not block."""

    def refused(self, reason: str, status: int, client: str | None, path: str) -> None:
        """The guard turned the request away: `status` 401 or 403, `reason` as the guard names it."""

    def limited(
        self, reason: str, retry_after: int, client: str | None, path: str, user: str | None, messages: int = 1
    ) -> None:
        """The rate limits refused the request (429), or `messages` messages of a JSON-RPC batch it carried (the
        door's check let its first through; the others each got the 429's error inside the batch's answer):
        `reason` says whose limit, `caller_rate_limit` or `exposition_rate_limit`; `user`: whom the guard admitted
        it as."""
