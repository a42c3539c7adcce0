"""How many messages of a JSON-RPC batch may run, as the layer in front of the endpoint decides.

A layer that admits HTTP requests (a rate limit, say) sees one request where a 2025-03-26 batch carries up
to `max_batch_messages` messages. It may put a `BatchAllowance` in the ASGI scope under
`BATCH_ALLOWANCE_KEY`; before a batch's first message runs, the endpoint asks it once how many of the
batch's messages may (the engine knows nothing of what the layer counts, nor why it refuses). The first
`Allowance.messages` run as usual; each request after them is answered with the allowance's error and not
run, and notifications and responses after them are dropped, as the layer would have refused each sent alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

BATCH_ALLOWANCE_KEY = "apimcp.batch_allowance"
"""The ASGI scope key a layer in front of the endpoint sets to a `BatchAllowance`."""


@dataclass(frozen=True, slots=True)
class Allowance:
    """How many messages of a batch may run, counted from its first, and the JSON-RPC error each request beyond
    them gets (code, message and data, as the layer would refuse the request sent alone)."""

    messages: int
    code: int = 0
    message: str = ""
    data: Any = None


class BatchAllowance(Protocol):
    async def __call__(self, messages: int) -> Allowance:
        """A batch of `messages` messages (at least 2) arrived in one request: how many of them may run."""
        ...
