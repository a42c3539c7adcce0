"""A backend called through its plan's retries and circuit breaker (`settings.py`).

Each call first asks the breaker: an open one answers at once with a failure saying when the backend is tried
again. An idempotent call (`retries.idempotent`) that fails in a way the same call may not (`Failure.transient`)
is tried again after a jittered backoff, while the retry budget allows, attempts remain and the wait ends before
the retries' deadline; any other call is made once. Retries and the breaker's changes are told to `observer`
(metrics, spans)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, Progress
from apimcp.catalog.model import Operation
from apimcp.resilience.breaker import CircuitBreaker
from apimcp.resilience.retries import RetryBudget, backoff, idempotent
from apimcp.resilience.settings import Resilience

log = logging.getLogger("apimcp.resilience")

Observer = Callable[[str, str], None]
"""(event: retry, breaker_open, breaker_closed, refused, tool)."""


def _quiet(event: str, tool: str) -> None:
    """The default observer: nothing is told."""


class ResilientBackend(Backend):
    __slots__ = ("_budget", "_clock", "_inner", "_label", "_observer", "_sleep", "breaker", "settings")

    def __init__(
        self, inner: Backend, settings: Resilience, label: str, observer: Observer = _quiet,
        sleep: Callable[[float], Any] = asyncio.sleep, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self._inner = inner
        self.settings = settings
        self.breaker = CircuitBreaker(settings.breaker) if settings.breaker is not None else None
        self._budget = RetryBudget(settings.retries) if settings.retries is not None else None
        self._observer = observer
        self._sleep = sleep
        self._clock = clock
        self._label = label

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        retries, budget = self.settings.retries, self._budget
        attempts = retries.attempts if retries is not None and idempotent(operation) else 1
        if budget is not None:
            budget.called()
        tried = 0
        deadline = self._clock() + retries.deadline_ms / 1000 if retries is not None and attempts > 1 else 0.0
        if attempts > 1 and progress is not None:
            progress = rising(progress)
        while True:
            tried += 1
            result = await self._once(operation, arguments, progress, extras)
            if not (isinstance(result, Failure) and result.transient) or tried >= attempts:
                return result
            assert retries is not None
            wait = backoff(retries, tried)
            if self._clock() + wait > deadline or budget is None or not budget.spend():
                return result
            self._observer("retry", operation.tool_name)
            await self._sleep(wait)

    async def _once(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None,
        extras: CallExtras | None,
    ) -> BackendResult:  # fmt: skip
        breaker = self.breaker
        if breaker is None:
            return await self._inner.call(operation, arguments, progress, extras)
        admitted = breaker.admit()
        if not isinstance(admitted, str):
            self._observer("refused", operation.tool_name)
            return Failure(f"The backend is failing: calls to it are refused for {admitted:.0f} s more (circuit "
                           "open)", 503, unsent=True)  # fmt: skip
        probe = admitted == "probe"
        try:
            result = await self._inner.call(operation, arguments, progress, extras)
        except BaseException:
            breaker.released(probe)
            raise
        if isinstance(result, Failure) and result.local:  # nothing reached the backend: nothing learnt of it
            breaker.released(probe)
        elif isinstance(result, Failure) and (result.transient or result.unsent):
            # failing now, or never reached (a name that does not resolve, a TLS handshake refused): a URL that
            # cannot be reached is no healthy one
            if breaker.failed(probe):
                log.warning("the backend of %s keeps failing: its circuit opens for %g s", self._label,
                            breaker.settings.open_seconds)  # fmt: skip
                self._observer("breaker_open", operation.tool_name)
        elif breaker.succeeded(probe):
            self._observer("breaker_closed", operation.tool_name)
        return result

    async def close(self) -> None:
        await self._inner.close()


def rising(progress: Progress) -> Progress:
    """`progress` told only what goes beyond what it was told before: an attempt made again (or elsewhere, on
    failover) starts its count over, and MCP's progress only ever increases."""
    told = [float("-inf")]

    async def tell(value: float, total: float | None, message: str | None) -> None:
        if value > told[0]:
            told[0] = value
            await progress(value, total, message)

    return tell
