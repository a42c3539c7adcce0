"""Whether an upstream MCP server answers: what a gateway reports of the servers it fronts.

An upstream is failing when the gateway's last exchange with it did not get an answer (it could not be
reached, it timed out, its stream broke) or got a server error (HTTP 5xx); it is up once it answers anything
else, a tool error or a refusal included (a server that says no is working). It is unknown until first called.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

State = Literal["unknown", "up", "failing"]


@dataclass(slots=True)
class UpstreamHealth:
    state: State = "unknown"
    since: float = 0.0
    """time.monotonic() of the change to `state`."""

    def answered(self) -> None:
        self._become("up")

    def failed(self) -> None:
        self._become("failing")

    def _become(self, state: State) -> None:
        if state != self.state:
            self.state = state
            self.since = time.monotonic()
