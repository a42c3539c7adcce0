"""A backend that answers what a test scripts, counting its calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Progress
from apimcp.catalog.model import Operation


class Scripted(Backend):
    """Answers with `results` in turn (the last one again once they run out)."""

    def __init__(self, results: Sequence[BackendResult]) -> None:
        self.results = list(results)
        self.calls = 0

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        self.calls += 1
        return self.results[min(self.calls, len(self.results)) - 1]
