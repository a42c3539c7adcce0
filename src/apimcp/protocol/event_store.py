"""The events of session-era SSE streams, kept a while so that a client whose stream dropped can resume it.

Every event of a session's stream (its GET stream, or the stream answering one of its POSTs; 2025-03-26 and
later) gets an id `{stream}.{n}` and is kept for `retention_seconds`, at most `max_events` per stream.
A client that lost the stream sends a GET with `Last-Event-ID`; any replica sharing the store replays what
came after that id, and on a POST's stream follows it until its response, for as long as the request runs.

Ids are unguessable (the stream part is random) and each stream remembers its session, so a client can only
resume its own streams. `MemoryEventStore` serves one process; a shared store (`apimcp.state.redis_events`)
lets a client resume on another replica. Beside the streams, each store keeps its sessions' `backlog`: what a
GET stream missed while none was open (`backlog.py`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from apimcp.protocol.backlog import Backlog, MemoryBacklog

log = logging.getLogger("apimcp.protocol")
StreamKind = Literal["get", "post"]
DEFAULT_RETENTION_SECONDS = 300.0
DEFAULT_MAX_EVENTS = 1000
DEFAULT_MAX_STREAMS = 10_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
RETRY_MILLISECONDS = 1000
"""The `retry:` hint of every stream: how soon a client whose stream ended reconnects."""


def new_stream_key() -> str:
    return secrets.token_urlsafe(16)


def split_event_id(event_id: str) -> tuple[str, int] | None:
    """`(stream, n)` of an id this store made; None for anything else."""
    stream, _, number = event_id.rpartition(".")
    if not stream or len(stream) > 64 or not number.isdigit() or len(number) > 12:
        return None
    return stream, int(number)


@dataclass(frozen=True, slots=True)
class StreamInfo:
    session_id: str
    kind: StreamKind
    ended: bool
    """The stream's last event was written (a POST's response): nothing more will come."""


class EventStore(ABC):
    """Where stream events wait for a client that may come back."""

    retention_seconds: float
    backlog: Backlog
    """What sessions' GET streams missed while none was open, for the next one."""

    @abstractmethod
    async def append(
        self, stream: str, session_id: str, kind: StreamKind, data: bytes, *, last: bool, after: int = 0
    ) -> int:
        """Keep one event (its JSON) of `stream`; its number (1, 2, ...). `last`: the stream ends with it. `after`:
        the last number the stream's writer gave out, where numbering goes on if the store forgot the stream
        meanwhile (an event id is never given out twice)."""

    @abstractmethod
    async def end(self, stream: str) -> None:
        """Nothing more will come on `stream` (its request was cancelled): a client following it stops there."""

    @abstractmethod
    async def info(self, stream: str) -> StreamInfo | None:
        """What the stream is, or None when unknown or expired."""

    @abstractmethod
    async def after(self, stream: str, number: int, wait_seconds: float) -> list[tuple[int, bytes]]:
        """The events kept after `number`, waiting up to `wait_seconds` for one when there are none yet."""


@dataclass(slots=True)
class _Stream:
    session_id: str
    kind: StreamKind
    events: list[tuple[int, bytes]] = field(default_factory=list)
    size: int = 0
    count: int = 0
    ended: bool = False
    touched: float = 0.0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)


class MemoryEventStore(EventStore):
    """Streams in this process's memory; beyond `max_streams` streams or `max_bytes` of events, the least
    recently written streams are forgotten first."""

    def __init__(
        self,
        retention_seconds: float = DEFAULT_RETENTION_SECONDS,
        *,
        max_events: int = DEFAULT_MAX_EVENTS,
        max_streams: int = DEFAULT_MAX_STREAMS,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if retention_seconds <= 0 or max_events <= 0 or max_streams <= 0 or max_bytes <= 0:
            raise ValueError("event store limits must be positive")
        self.retention_seconds = retention_seconds
        self._max_events = max_events
        self._max_streams = max_streams
        self._max_bytes = max_bytes
        self._bytes = 0
        self._clock = clock
        self._streams: OrderedDict[str, _Stream] = OrderedDict()
        self.backlog = MemoryBacklog()

    @property
    def kept_bytes(self) -> int:
        """Bytes of the events kept."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._streams)

    async def append(
        self, stream: str, session_id: str, kind: StreamKind, data: bytes, *, last: bool, after: int = 0
    ) -> int:
        now = self._clock()
        kept = self._live(stream, now)
        if kept is None:
            self._expire(now)
            kept = self._streams[stream] = _Stream(session_id, kind, count=after)
        kept.count += 1
        kept.events.append((kept.count, data))
        kept.size += len(data)
        self._bytes += len(data)
        if len(kept.events) > self._max_events:
            self._drop_events(kept, len(kept.events) - self._max_events)
        kept.ended = kept.ended or last
        kept.touched = now
        self._streams.move_to_end(stream)
        while len(self._streams) > self._max_streams or (self._bytes > self._max_bytes and len(self._streams) > 1):
            self._forget(next(iter(self._streams)))
        if self._bytes > self._max_bytes:  # one stream alone is too large: keep its newest events
            self._drop_events(kept, len(kept.events) - 1)
        kept.arrived.set()
        kept.arrived = asyncio.Event()
        return kept.count

    async def end(self, stream: str) -> None:
        kept = self._live(stream, self._clock())
        if kept is not None:
            kept.ended = True
            kept.arrived.set()
            kept.arrived = asyncio.Event()

    async def info(self, stream: str) -> StreamInfo | None:
        kept = self._live(stream, self._clock())
        return StreamInfo(kept.session_id, kept.kind, kept.ended) if kept is not None else None

    async def after(self, stream: str, number: int, wait_seconds: float) -> list[tuple[int, bytes]]:
        kept = self._live(stream, self._clock())
        if kept is None:
            return []
        found = [event for event in kept.events if event[0] > number]
        if found or kept.ended or wait_seconds <= 0:
            return found
        arrived = kept.arrived
        try:
            await asyncio.wait_for(arrived.wait(), wait_seconds)
        except TimeoutError:
            return []
        return [event for event in kept.events if event[0] > number]

    def _live(self, stream: str, now: float) -> _Stream | None:
        kept = self._streams.get(stream)
        if kept is not None and now - kept.touched > self.retention_seconds:
            self._forget(stream)
            return None
        return kept

    def _expire(self, now: float) -> None:
        while self._streams:
            key, oldest = next(iter(self._streams.items()))
            if now - oldest.touched <= self.retention_seconds:
                return
            self._forget(key)

    def _forget(self, stream: str) -> None:
        kept = self._streams.pop(stream)
        self._bytes -= kept.size

    def _drop_events(self, kept: _Stream, count: int) -> None:
        dropped = sum(len(data) for _, data in kept.events[:count])
        del kept.events[:count]
        kept.size -= dropped
        self._bytes -= dropped


class StreamRecorder:
    """Numbers and keeps the events of one stream as they are sent."""

    __slots__ = ("_key", "_kind", "_last", "_session_id", "_store")

    def __init__(self, store: EventStore, session_id: str, kind: StreamKind, key: str | None = None) -> None:
        self._store = store
        self._session_id = session_id
        self._kind = kind
        self._key = key  # made on the first event: most POSTs answer with plain JSON and never need one
        self._last = 0

    def sent(self, number: int) -> None:
        """Events up to `number` went out already (replayed): numbering never goes back below it."""
        self._last = max(self._last, number)

    async def record(self, data: bytes, *, last: bool = False) -> bytes | None:
        """Keep one event; the id it goes out with, or None when the store failed (the event still goes out,
        it just cannot be replayed)."""
        if self._key is None:
            self._key = new_stream_key()
        try:
            number = await self._store.append(
                self._key, self._session_id, self._kind, data, last=last, after=self._last
            )
        except Exception as exc:  # a shared store that is away must not fail the request
            log.warning("an SSE event could not be kept for resumption (%s)", type(exc).__name__)
            return None
        self._last = number
        return f"{self._key}.{number}".encode()

    async def end(self) -> None:
        """The stream ends without a last event (its request was cancelled)."""
        if self._key is None:
            return
        try:
            await self._store.end(self._key)
        except Exception as exc:  # as in `record`: the client's resumption just waits for the stream to expire
            log.warning("an SSE stream's end could not be kept for resumption (%s)", type(exc).__name__)
