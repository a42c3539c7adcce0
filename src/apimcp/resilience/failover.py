"""Several backend URLs for one service, in order: a call goes to the first, and moves on to the next when the
one before could not be reached (`Failure.unsent`: no connection, or its circuit breaker open), or, for an
idempotent call, failed in a way the same call may not elsewhere (`Failure.transient`). Each URL has its own
circuit breaker (`backend.ResilientBackend`), which is what its health is: a URL that keeps failing is skipped at
once until a probe finds it back. A call that moved on is told to the observer (`failover`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, Progress
from apimcp.catalog.model import Operation
from apimcp.resilience.backend import rising
from apimcp.resilience.retries import idempotent

Observer = Callable[[str, str], None]


class FailoverBackend(Backend):
    __slots__ = ("_backends", "_observer")

    def __init__(self, backends: Sequence[Backend], observer: Observer) -> None:
        if not backends:
            raise ValueError("give at least one backend")
        self._backends = tuple(backends)
        self._observer = observer

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        may_repeat = idempotent(operation)
        if progress is not None and len(self._backends) > 1:
            progress = rising(progress)
        result: BackendResult | None = None
        for position, backend in enumerate(self._backends):
            if position:
                self._observer("failover", operation.tool_name)
            result = await backend.call(operation, arguments, progress, extras)
            if not isinstance(result, Failure) or not (result.unsent or (may_repeat and result.transient)):
                return result
        assert result is not None
        return result

    async def close(self) -> None:
        for backend in self._backends:
            await backend.close()
