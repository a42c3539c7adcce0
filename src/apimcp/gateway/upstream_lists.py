"""What a gateway does when an MCP server it fronts says one of its lists changed (`list_changed`).

The gateway never serves a definition the catalog does not hold: a changed tool must be read by the control
plane, compared with what was accepted, and held for an admin (`control/domain/upstream_changes.py`). So a
gateway that follows a control plane asks it to read that server again now rather than at its next periodic
round; a gateway serving a configuration file says in its log that the change is not served until it is
started again. Either happens at most once per `QUIET_SECONDS` per service, whatever a server sends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("apimcp.gateway")

QUIET_SECONDS = 30.0
MAX_SERVICES = 10_000
"""Services remembered for the quiet period (more are forgotten, oldest first: the worst is one extra report)."""


class UpstreamLists:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.report: Callable[[str], None] | None = None
        """Asks the control plane to read a service's server again (set while a control plane is followed)."""
        self._clock = clock
        self._last: dict[str, float] = {}

    def heard(self, service_id: str, kind: str) -> None:
        now = self._clock()
        last = self._last.get(service_id)
        if last is not None and now - last < QUIET_SECONDS:
            return
        self._last.pop(service_id, None)
        self._last[service_id] = now
        while len(self._last) > MAX_SERVICES:
            del self._last[next(iter(self._last))]
        if self.report is not None:
            self.report(service_id)
        else:
            log.warning(
                "the MCP server of service %s says its %s changed; this gateway serves what it imported until it is "
                "started again",
                service_id,
                kind,
            )
