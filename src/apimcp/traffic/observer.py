"""The tally's ears: hears every request an exposition answered (and every call its scripts made), every request
its door refused, and, through `TimedBackend`, the time each request spent waiting on backends."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Progress
from apimcp.catalog.model import Operation
from apimcp.guardrails.chain import Heard
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord
from apimcp.traffic.tally import DOOR, OTHER, TrafficTally

_waited: ContextVar[list[float] | None] = ContextVar("apimcp_backend_waited", default=None)
"""The milliseconds the current request spent on backends so far (a list of one, shared with its child tasks);
None outside a request, or before it called any backend."""


class TrafficObserver:
    """One exposition's requests, counted in the gateway's tally; a call of a tool the exposition does not serve
    (`serves`), whose name is the client's to make up, is counted under `OTHER`: a flood of made-up names costs one
    row per exposition and minute, not one per name."""

    __slots__ = ("_exposition_id", "_tally", "serves")

    def __init__(self, tally: TrafficTally, exposition_id: str) -> None:
        self._tally = tally
        self._exposition_id = exposition_id
        self.serves: Callable[[str], bool] = lambda _: False
        """Whether the exposition serves a tool of this name (set once its handler is built)."""

    def _tool(self, name: str | None) -> str | None:
        return name if name is None or self.serves(name) else OTHER

    def request_started(self, method: str, target: str | None, source: RequestSource) -> None:
        _waited.set([-1.0])  # set in the request's task, before the handler's child tasks copy the context

    def request_finished(self, record: RequestRecord) -> None:
        waited = _waited.get()
        backend = waited[0] if waited is not None and waited[0] >= 0 else None
        _waited.set(None)
        tool = self._tool(record.target) if record.method == "tools/call" else record.target
        self._tally.count(self._exposition_id, record.method, tool, record.outcome, record.duration_ms, backend)

    def call_started(self, tool: str, source: RequestSource, via: Mapping[str, str]) -> None:
        """Nothing before: a script's call is counted when it ends."""

    def call_finished(self, record: RequestRecord, via: Mapping[str, str]) -> None:
        # a script's call into the exposition: a call of its tool like any other (its backend time is its
        # request's, counted there)
        tool = self._tool(record.target)
        self._tally.count(self._exposition_id, "tools/call", tool, record.outcome, record.duration_ms)

    def call_denied(self, tool: str, source: RequestSource, rule: str | None, via: Mapping[str, str] | None) -> None:
        """Counted as the tool error it answers."""

    def call_approval(
        self, tool: str, source: RequestSource, rule: str | None, outcome: str, via: Mapping[str, str] | None
    ) -> None:
        """Counted as the request it belongs to."""

    def call_guarded(self, tool: str, source: RequestSource, heard: Heard, via: Mapping[str, str] | None) -> None:
        """Counted as the request it belongs to."""

    def refused(self, reason: str, status: int, client: str | None, path: str) -> None:
        self._tally.count(self._exposition_id, DOOR, None, "refused", None)

    def limited(
        self, reason: str, retry_after: int, client: str | None, path: str, user: str | None, messages: int = 1
    ) -> None:
        self._tally.count(self._exposition_id, DOOR, None, "limited", None, times=max(messages, 1))


class TimedBackend(Backend):
    """`inner`, adding the time each call takes to its request's backend time (calls made in parallel add up:
    the figure is time spent by backends, which a request waiting on several at once may exceed)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:
        waited = _waited.get()
        if waited is None:
            return await self.inner.call(operation, arguments, progress, extras)
        started = time.perf_counter()
        try:
            return await self.inner.call(operation, arguments, progress, extras)
        finally:
            waited[0] = max(waited[0], 0.0) + (time.perf_counter() - started) * 1000

    async def close(self) -> None:
        await self.inner.close()
