"""Answers of read-only tools kept for a while, and identical calls made once.

A call is identified by its tool, its arguments, and everything it sends the backend beyond the backend's own
credentials: the headers passed on from the client and the user's credentials (`CallExtras`). Two callers share
an answer only if the backend would receive the same request from both; a user's credential never serves
another user. Trace context headers, which differ on every request, are left out of the key.

While a call is being made, identical ones wait for its answer instead of calling too (a request cancelled
meanwhile does not cancel the call the others wait for). Only successes are kept, each for its tool's TTL;
answers larger than `MAX_ANSWER_BYTES` are not kept, and the cache holds at most `max_entries` answers and
`max_bytes` bytes, the least recently used dropped first.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from apimcp.backends.base import BackendResult, BinaryBody, CallExtras, EmptyBody, JsonBody, TextBody, UnparsedJson

MAX_ANSWER_BYTES: Final = 1_048_576
TRACE_HEADERS: Final = frozenset({"traceparent", "tracestate", "baggage"})

Outcome = Literal["hit", "miss", "coalesced"]


def call_key(tool: str, arguments: Mapping[str, Any], extras: CallExtras | None) -> bytes:
    headers: list[tuple[str, str]] = []
    credentials: Any = None
    if extras is not None:
        headers = sorted((k.lower(), v) for k, v in extras.headers.items() if k.lower() not in TRACE_HEADERS)
        placement = extras.credentials
        if placement is not None:
            credentials = [sorted(placement.headers.items()), placement.query, sorted(placement.cookies.items())]
    document = orjson.dumps([tool, arguments, headers, credentials], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(document).digest()


def _size(result: BackendResult) -> int | None:
    """The bytes a kept answer holds (None: not kept)."""
    if isinstance(result, JsonBody | TextBody):
        return len(result.text) * 2  # the text, and its parsed value about as much
    if isinstance(result, BinaryBody):
        return len(result.data)
    if isinstance(result, UnparsedJson):
        return len(result.data)
    if isinstance(result, EmptyBody):
        return 64
    return None  # failures, MCP servers' answers


@dataclass(frozen=True, slots=True)
class _Kept:
    result: BackendResult
    until: float
    size: int


class AnswerCache:
    __slots__ = ("_bytes", "_clock", "_inflight", "_kept", "max_bytes", "max_entries")

    def __init__(
        self, max_entries: int = 1000, max_bytes: int = 32 * 1_048_576, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._clock = clock
        self._kept: OrderedDict[bytes, _Kept] = OrderedDict()
        self._inflight: dict[bytes, asyncio.Future[BackendResult]] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    async def answer(
        self, key: bytes, ttl: float, call: Callable[[], Awaitable[BackendResult]]
    ) -> tuple[BackendResult, Outcome]:
        kept = self._kept.get(key)
        if kept is not None:
            if kept.until > self._clock():
                self._kept.move_to_end(key)
                return kept.result, "hit"
            self._drop(key)
        waiting = self._inflight.get(key)
        if waiting is not None:
            return await asyncio.shield(waiting), "coalesced"
        task = asyncio.ensure_future(self._made(key, ttl, call))
        self._inflight[key] = task
        return await asyncio.shield(task), "miss"

    async def _made(self, key: bytes, ttl: float, call: Callable[[], Awaitable[BackendResult]]) -> BackendResult:
        try:
            result = await call()
        finally:
            self._inflight.pop(key, None)
        size = _size(result)
        if size is not None and size <= MAX_ANSWER_BYTES and ttl > 0:
            self._keep(key, _Kept(result, self._clock() + ttl, size))
        return result

    def _keep(self, key: bytes, kept: _Kept) -> None:
        self._drop(key)
        self._kept[key] = kept
        self._bytes += kept.size
        while self._kept and (len(self._kept) > self.max_entries or self._bytes > self.max_bytes):
            self._drop(next(iter(self._kept)))

    def _drop(self, key: bytes) -> None:
        kept = self._kept.pop(key, None)
        if kept is not None:
            self._bytes -= kept.size
