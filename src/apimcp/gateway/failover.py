"""A gateway following several control-plane replicas: when the one it talks to cannot be reached, the next.

Control-plane replicas share one database (PostgreSQL), so any of them serves the same snapshots and
revisions; a change made through one reaches waiters on the others within `changes.POLL_SECONDS`. The
gateway stays with the replica that answers and moves on, in the order given, only when it fails to: a
refusal (token, key) is the same answer everywhere and is not retried elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from apimcp.gateway.sync import AuditRefused, Refused, SnapshotSource

log = logging.getLogger("apimcp.gateway.sync")
T = TypeVar("T")


class FailoverSource(SnapshotSource):
    def __init__(self, sources: Sequence[tuple[str, SnapshotSource]]) -> None:
        if not sources:
            raise ValueError("give at least one control plane")
        self._sources = list(sources)
        self._current = 0

    @property
    def current(self) -> str:
        """The URL of the replica followed now."""
        return self._sources[self._current][0]

    async def _each(self, call: Callable[[SnapshotSource], Awaitable[T]]) -> T:
        """`call` on the current replica, then on each other once, until one answers."""
        failure: Exception | None = None
        for step in range(len(self._sources)):
            index = (self._current + step) % len(self._sources)
            url, source = self._sources[index]
            try:
                result = await call(source)
            except (asyncio.CancelledError, Refused, AuditRefused):
                raise
            except Exception as exc:
                failure = exc
                if len(self._sources) > 1:
                    log.warning("control plane %s unreachable (%s); trying the next one", url, exc)
                continue
            if index != self._current:
                log.warning("now following control plane %s", url)
                self._current = index
            return result
        assert failure is not None
        raise failure

    async def fetch(self, known_services: list[str]) -> Mapping[str, Any]:
        return await self._each(lambda source: source.fetch(known_services))

    async def wait_for_change(self, revision: int) -> None:
        await self._each(lambda source: source.wait_for_change(revision))

    async def report_audit(self, events: list[dict[str, Any]], report: str) -> None:
        await self._each(lambda source: source.report_audit(events, report))

    async def report_upstream_changed(self, service_id: str) -> None:
        await self._each(lambda source: source.report_upstream_changed(service_id))

    async def report_upstreams(self, states: Mapping[str, str]) -> None:
        await self._each(lambda source: source.report_upstreams(states))

    async def report_traffic(self, revision: int, rows: list[dict[str, Any]], report: str) -> None:
        await self._each(lambda source: source.report_traffic(revision, rows, report))
