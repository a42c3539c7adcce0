"""Session records for session-era clients (2024-11-05 ... 2025-11-25), behind one interface.

A session is what `initialize` negotiated: the revision, the client's
capabilities and identity, its log level and resource subscriptions. Records
are plain data so that a shared store (Redis) can hold them for several
replicas; live connections (open SSE streams, pending server-to-client
requests) are process-local and live in the transport, not here.

A store bounds how many sessions it holds, in total and per endpoint, and
forgets a session after `idle_timeout` seconds without a request or a touch
(an open GET stream touches its session). Capabilities and clientInfo stay as
the JSON the client sent: parsed, a small document of empty objects weighs
twenty times its size, and the record is what a shared store would hold anyway.
"""

from __future__ import annotations

import math
import secrets
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from apimcp.protocol.versions import Revision

DEFAULT_IDLE_TIMEOUT_SECONDS = 1800.0
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_MAX_SESSIONS_PER_ENDPOINT = 1_000
DEFAULT_MAX_SESSIONS_PER_CALLER = 100


def new_session_id() -> str:
    """An unguessable id of visible ASCII (0x21-0x7E) only: 256 bits, URL-safe Base64."""
    return secrets.token_urlsafe(32)


@dataclass(slots=True)
class Session:
    id: str
    endpoint: str
    """The endpoint that created the session; it is unknown on every other endpoint."""
    revision: Revision
    capabilities_json: bytes = b"{}"
    """The client's capabilities, as JSON."""
    client_info_json: bytes | None = None
    """The client's clientInfo, as JSON (None when it sent none)."""
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)
    initialized: bool = False
    last_seen: float = field(default_factory=time.monotonic)
    principal: str | None = None
    """The authenticated caller that opened the session: no other caller may use it."""
    created_at: float = field(default_factory=time.time)
    """When `initialize` opened it (seconds since the epoch): what its GET streams missed counts from then."""
    caller: str = ""
    """Whom the session counts against on its endpoint (`max_sessions_per_caller`): `caller.caller_key`, the
    authenticated caller, else the host of the client's address."""

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return orjson.loads(self.capabilities_json)  # type: ignore[no-any-return]

    @property
    def client_info(self) -> dict[str, Any] | None:
        return orjson.loads(self.client_info_json) if self.client_info_json is not None else None

    def weight(self) -> int:
        """Bytes of the record that the client chose: capabilities, clientInfo and subscribed URIs."""
        info = len(self.client_info_json) if self.client_info_json is not None else 0
        return len(self.capabilities_json) + info + sum(len(uri.encode()) for uri in self.subscriptions)


@dataclass(frozen=True, slots=True)
class SessionChange:
    """One change a request makes to its session's record: its log level, its `initialized`, or one subscription
    (a URI followed or no longer followed). A store writes that field alone, so that what another replica changed
    meanwhile is kept."""

    field: Literal["log_level", "initialized", "subscribe", "unsubscribe"]
    value: str = ""
    """The level, or the URI; nothing for `initialized`."""

    def apply(self, session: Session) -> None:
        if self.field == "log_level":
            session.log_level = self.value
        elif self.field == "initialized":
            session.initialized = True
        elif self.field == "subscribe":
            session.subscriptions.add(self.value)
        else:
            session.subscriptions.discard(self.value)


class SessionsFull(Exception):
    """No room for another session, in the whole store, for this endpoint, or for this caller on it."""

    def __init__(self, scope: Literal["server", "endpoint", "caller"], retry_after: int) -> None:
        super().__init__(f"no room for another session on this {scope}")
        self.scope = scope
        self.retry_after = retry_after
        """Seconds until the least recently used session expires, if nothing touches it."""


class StoreUnavailable(Exception):
    """A shared store cannot be reached: the request is answered 503 (try again), nothing is lost by it."""


class SessionStore(ABC):
    """Where session records live; the only place memory and shared storage differ."""

    idle_timeout: float
    """Seconds without a request or a touch after which a session is gone."""

    @abstractmethod
    async def create(self, session: Session) -> None:
        """Store a new session; raises SessionsFull when there is no room even after expiring idle ones."""

    @abstractmethod
    async def get(self, session_id: str) -> Session | None:
        """The live session, refreshed; None when unknown, expired or deleted."""

    @abstractmethod
    async def touch(self, session_id: str) -> bool:
        """Keep a session alive without reading it; False when it is unknown, expired or deleted."""

    @abstractmethod
    async def change(self, session: Session, change: SessionChange) -> None:
        """Make `change` to the stored record of `session` (a record obtained from `get`), and to `session`."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """End a session; False when it did not exist."""

    def forget_copy(self, session_id: str) -> None:  # noqa: B027 - a hook: stores without copies need nothing
        """Another replica ended the session: drop any copy of its record kept in this process."""


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """How many sessions a store keeps, and for how long (a shared store reads the same values)."""

    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS
    """Seconds without a request (or an open GET stream) after which a session is gone: 404."""
    max_sessions: int = DEFAULT_MAX_SESSIONS
    """Sessions of the whole store: initialize gets 503 + Retry-After beyond."""
    max_sessions_per_endpoint: int = DEFAULT_MAX_SESSIONS_PER_ENDPOINT
    """Sessions of one endpoint (one exposition): initialize gets 503 + Retry-After beyond."""
    max_sessions_per_caller: int = DEFAULT_MAX_SESSIONS_PER_CALLER
    """Sessions of one caller (the authenticated caller, else the host of the client's address, as rate limits
    count callers) on one endpoint: sessions are free to open, and one client must not take every room of an
    endpoint; initialize gets 429 beyond."""

    def __post_init__(self) -> None:
        if (
            not self.idle_timeout > 0
            or self.max_sessions <= 0
            or self.max_sessions_per_endpoint <= 0
            or self.max_sessions_per_caller <= 0
        ):
            raise ValueError("session limits must be positive")


class MemorySessionStore(SessionStore):
    """Sessions in this process's memory, kept in least-recently-seen order.

    The order makes expiry cheap: expired sessions are always at the front, so
    each creation drops them from there, and each session is dropped once.
    Keeping the order costs two moves, so a session's time is refreshed at
    most once per `idle_timeout / 10` (one second at most): it may expire that
    much before a full `idle_timeout` has passed since its last request.
    """

    def __init__(
        self,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_sessions_per_endpoint: int = DEFAULT_MAX_SESSIONS_PER_ENDPOINT,
        max_sessions_per_caller: int = DEFAULT_MAX_SESSIONS_PER_CALLER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive")
        if max_sessions <= 0 or max_sessions_per_endpoint <= 0 or max_sessions_per_caller <= 0:
            raise ValueError("max_sessions, max_sessions_per_endpoint and max_sessions_per_caller must be positive")
        self.idle_timeout = idle_timeout
        self._resolution = min(1.0, idle_timeout / 10)
        self._max_sessions = max_sessions
        self._max_per_endpoint = max_sessions_per_endpoint
        self._max_per_caller = max_sessions_per_caller
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._by_endpoint: dict[str, OrderedDict[str, Session]] = {}
        self._by_caller: dict[tuple[str, str], OrderedDict[str, Session]] = {}

    @classmethod
    def with_limits(cls, limits: SessionLimits) -> MemorySessionStore:
        return cls(
            limits.idle_timeout,
            max_sessions=limits.max_sessions,
            max_sessions_per_endpoint=limits.max_sessions_per_endpoint,
            max_sessions_per_caller=limits.max_sessions_per_caller,
        )

    def __len__(self) -> int:
        return len(self._sessions)

    async def create(self, session: Session) -> None:
        now = self._clock()
        self._drop_expired(now)
        if len(self._sessions) >= self._max_sessions:
            raise SessionsFull("server", self._retry_after(self._sessions, now))
        of_endpoint = self._by_endpoint.get(session.endpoint)
        if of_endpoint is None:
            of_endpoint = self._by_endpoint[session.endpoint] = OrderedDict()
        elif len(of_endpoint) >= self._max_per_endpoint:
            raise SessionsFull("endpoint", self._retry_after(of_endpoint, now))
        of_caller = self._by_caller.get((session.endpoint, session.caller))
        if of_caller is None:
            of_caller = OrderedDict()
        elif len(of_caller) >= self._max_per_caller:
            raise SessionsFull("caller", self._retry_after(of_caller, now))
        session.last_seen = now
        self._sessions[session.id] = of_endpoint[session.id] = of_caller[session.id] = session
        self._by_caller[session.endpoint, session.caller] = of_caller

    async def get(self, session_id: str) -> Session | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = self._clock()
        idle = now - session.last_seen
        if idle > self.idle_timeout:
            del self._sessions[session_id]
            self._forget(session)
            return None
        if idle > self._resolution:
            session.last_seen = now
            self._sessions.move_to_end(session_id)
            self._by_endpoint[session.endpoint].move_to_end(session_id)
            self._by_caller[session.endpoint, session.caller].move_to_end(session_id)
        return session

    async def touch(self, session_id: str) -> bool:
        return await self.get(session_id) is not None

    async def change(self, session: Session, change: SessionChange) -> None:
        change.apply(session)
        kept = self._sessions.get(session.id)
        if kept is not None and kept is not session:
            change.apply(kept)

    async def delete(self, session_id: str) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        self._forget(session)
        return True

    def _drop_expired(self, now: float) -> None:
        sessions = self._sessions
        while sessions:
            oldest = next(iter(sessions.values()))
            if now - oldest.last_seen <= self.idle_timeout:
                return
            del sessions[oldest.id]
            self._forget(oldest)

    def _forget(self, session: Session) -> None:
        of_endpoint = self._by_endpoint.get(session.endpoint)
        if of_endpoint is not None:
            of_endpoint.pop(session.id, None)
            if not of_endpoint:
                del self._by_endpoint[session.endpoint]
        of_caller = self._by_caller.get((session.endpoint, session.caller))
        if of_caller is not None:
            of_caller.pop(session.id, None)
            if not of_caller:
                del self._by_caller[session.endpoint, session.caller]

    def _retry_after(self, sessions: OrderedDict[str, Session], now: float) -> int:
        oldest = next(iter(sessions.values()))
        return max(1, math.ceil(oldest.last_seen + self.idle_timeout - now))
