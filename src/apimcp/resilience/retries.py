"""When an idempotent call is tried again, and how long to wait: exponential backoff with full jitter (a random
wait below the doubled bound, so that callers who failed together do not come back together), within a retry
budget: retries are allowed for a share of the calls made, plus a few spare, so that a backend failing every
call is not sent a multiple of its traffic."""

from __future__ import annotations

import random
from typing import Final

from apimcp.catalog.model import McpBinding, Operation
from apimcp.resilience.settings import Retries

SPARE: Final = 10.0
"""Retries the budget starts with, and holds at most beyond its share."""


def idempotent(operation: Operation) -> bool:
    """Whether calling `operation` twice does what calling it once does, as its description says: GET, HEAD, PUT,
    DELETE (RFC 9110), GraphQL queries, gRPC methods marked idempotent. An MCP server's tool is never retried:
    its hints are its own word."""
    return operation.hints.idempotent is True and not isinstance(operation.binding, McpBinding)


def backoff(settings: Retries, retry: int, draw: float | None = None) -> float:
    """Seconds to wait before retry number `retry` (1 for the first)."""
    bound: float = min(settings.max_backoff_ms, settings.backoff_ms * (1 << min(retry - 1, 30))) / 1000
    return bound * (random.random() if draw is None else draw)  # jitter, not a secret


class RetryBudget:
    """Tokens earned by calls (`budget_percent` of one each) and spent by retries (one each)."""

    __slots__ = ("_share", "_tokens")

    def __init__(self, settings: Retries) -> None:
        self._share = settings.budget_percent / 100
        self._tokens = SPARE

    def called(self) -> None:
        self._tokens = min(self._tokens + self._share, SPARE + 100 * self._share)

    def spend(self) -> bool:
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
