"""A member's calls through the exposition's answer cache (`cache.py`): only read-only operations, each for its
tool's TTL (`settings.Cache`); the others are called as they are. `MemberBackend` never sends an MCP server's
calls here (they talk to the client)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apimcp.backends.base import Backend, BackendResult, CallExtras, Progress
from apimcp.catalog.model import Operation
from apimcp.resilience.cache import AnswerCache, Outcome, call_key
from apimcp.resilience.settings import Cache

Heard = Callable[[Outcome], None]


def _unheard(outcome: Outcome) -> None:
    """The default: nothing is told."""


class Cached:
    __slots__ = ("_cache", "_heard", "scope", "settings")

    def __init__(self, cache: AnswerCache, settings: Cache, scope: str, heard: Heard = _unheard) -> None:
        self._cache = cache
        self.settings = settings
        self.scope = scope
        """Which member of the exposition calls through it (its answers are not another member's)."""
        self._heard = heard

    async def call(
        self, backend: Backend, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None,
        extras: CallExtras | None,
    ) -> BackendResult:  # fmt: skip
        ttl = self.settings.ttl(operation.tool_name)
        if ttl <= 0 or operation.hints.read_only is not True:
            return await backend.call(operation, arguments, progress, extras)
        key = call_key(self.scope, operation, arguments, extras)
        result, outcome = await self._cache.answer(
            key, ttl, lambda told: backend.call(operation, arguments, told, extras), progress
        )
        self._heard(outcome)
        return result
