"""Answers of read-only tools kept for a while, and identical calls made once.

A call is identified by the exposition member it goes to, its operation (the tool's name and what it calls: a
`file://` read has no tool of its own, only the path it asks for), its arguments, and everything it sends the
backend beyond the backend's own credentials: the headers passed on from the client and the user's credentials
(`CallExtras`). Two callers share an answer only if the backend would receive the same request from both; a
user's credential never serves another user. Trace context headers, which differ on every request, are left out
of the key.

While a call is being made, identical ones wait for its answer instead of calling too (a request cancelled
meanwhile does not cancel the call the others wait for), and hear its progress from then on, each for itself: a
caller gone does not fail the call for the others. Only successes are kept, each for its tool's TTL (not a
GraphQL answer with errors beside its data, nor one whose errors are still unread in its bytes); answers larger
than `MAX_ANSWER_BYTES` are not kept, and the cache holds at most `max_entries` answers and `max_bytes` bytes,
the least recently used dropped first. A JSON answer is kept as its text and read again on each hit: a parsed
value takes about ten times its text's memory, and no two callers share one mutable value.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from apimcp.backends.base import (
    BackendResult,
    BinaryBody,
    CallExtras,
    EmptyBody,
    JsonBody,
    Progress,
    TextBody,
    UnparsedJson,
)
from apimcp.backends.graphql import graphql_answer
from apimcp.catalog.model import Operation
from apimcp.safety.json_parsing import parse_json

MAX_ANSWER_BYTES: Final = 1_048_576
TRACE_HEADERS: Final = frozenset({"traceparent", "tracestate"})
"""Left out of the key: the gateway writes them for each call. `baggage` is the client's own, passed on as it came
(a backend may answer by it: a tenant, a user), so it is part of the key."""

Outcome = Literal["hit", "miss", "coalesced"]


def call_key(scope: str, operation: Operation, arguments: Mapping[str, Any], extras: CallExtras | None) -> bytes:
    """The key of a call to `operation` of the member `scope` names."""
    headers: list[tuple[str, str]] = []
    credentials: Any = None
    if extras is not None:
        headers = sorted((k.lower(), v) for k, v in extras.headers.items() if k.lower() not in TRACE_HEADERS)
        placement = extras.credentials
        if placement is not None:
            credentials = [sorted(placement.headers.items()), placement.query, sorted(placement.cookies.items())]
    # the signature names what is called (`GET /books/2` for a file read): cheap, unlike the whole binding's repr
    called = [scope, operation.tool_name, operation.signature]
    document = orjson.dumps([called, arguments, headers, credentials], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(document).digest()


def _kept_form(result: BackendResult) -> tuple[BackendResult | _TextOnly, int] | None:
    """What is kept of an answer, and the bytes it holds (None: not kept)."""
    if isinstance(result, JsonBody):
        if result.notes:  # a GraphQL answer's errors beside partial data
            return None
        return _TextOnly(result.text, result.status), sys.getsizeof(result.text)
    if isinstance(result, TextBody):
        return result, sys.getsizeof(result.text)
    if isinstance(result, BinaryBody):
        return result, sys.getsizeof(result.data)
    if isinstance(result, UnparsedJson):
        if result.read is graphql_answer:  # its errors are inside: read, it may be a failure
            return None
        return result, sys.getsizeof(result.data)
    if isinstance(result, EmptyBody):
        return result, 64
    return None  # failures, MCP servers' answers


@dataclass(frozen=True, slots=True)
class _TextOnly:
    """A JSON answer without its parsed value (`JsonBody` again on each hit)."""

    text: str
    status: int


@dataclass(frozen=True, slots=True)
class _Kept:
    result: BackendResult | _TextOnly
    until: float
    size: int

    def answer(self) -> BackendResult:
        kept = self.result
        if isinstance(kept, _TextOnly):
            return JsonBody(parse_json(kept.text), kept.text, kept.status)
        return kept


class _Listeners:
    """The progress the callers of a call under way asked for."""

    __slots__ = ("listeners",)

    def __init__(self, progress: Progress | None) -> None:
        self.listeners: list[Progress] = [progress] if progress is not None else []

    async def tell(self, value: float, total: float | None, message: str | None) -> None:
        for listener in list(self.listeners):
            try:
                await listener(value, total, message)
            except Exception:  # that caller's client is gone: the others still hear, and the call goes on
                self.listeners.remove(listener)


def _own(result: BackendResult) -> BackendResult:
    """`result` for another caller than the one whose call made it: a parsed value of its own."""
    if isinstance(result, JsonBody):
        return JsonBody(parse_json(result.text), result.text, result.status, result.notes)
    return result


class AnswerCache:
    __slots__ = ("_bytes", "_clock", "_inflight", "_kept", "max_bytes", "max_entries")

    def __init__(
        self, max_entries: int = 1000, max_bytes: int = 32 * 1_048_576, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._clock = clock
        self._kept: OrderedDict[bytes, _Kept] = OrderedDict()
        self._inflight: dict[bytes, tuple[asyncio.Future[BackendResult], _Listeners]] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    async def answer(
        self,
        key: bytes,
        ttl: float,
        call: Callable[[Progress], Awaitable[BackendResult]],
        progress: Progress | None = None,
    ) -> tuple[BackendResult, Outcome]:
        """The answer of `call` (made with a progress that tells every caller waiting for it), kept or shared."""
        kept = self._kept.get(key)
        if kept is not None:
            if kept.until > self._clock():
                self._kept.move_to_end(key)
                return kept.answer(), "hit"
            self._drop(key)
        under_way = self._inflight.get(key)
        if under_way is not None:
            task, listeners = under_way
            if progress is not None:
                listeners.listeners.append(progress)
            return _own(await asyncio.shield(task)), "coalesced"
        listeners = _Listeners(progress)
        task = asyncio.ensure_future(self._made(key, ttl, call, listeners))
        self._inflight[key] = (task, listeners)
        return await asyncio.shield(task), "miss"

    async def _made(
        self, key: bytes, ttl: float, call: Callable[[Progress], Awaitable[BackendResult]], listeners: _Listeners
    ) -> BackendResult:
        try:
            result = await call(listeners.tell)
        finally:
            self._inflight.pop(key, None)
        form = _kept_form(result) if ttl > 0 else None
        if form is not None and form[1] <= MAX_ANSWER_BYTES:
            self._keep(key, _Kept(form[0], self._clock() + ttl, form[1]))
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
