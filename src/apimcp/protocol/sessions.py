"""Session records for session-era clients (2024-11-05 ... 2025-11-25), behind one interface.

A session is what `initialize` negotiated: the revision, the client's
capabilities and identity, its log level and resource subscriptions. Records
are plain data so that a shared store (Redis) can hold them for several
replicas; live connections (open SSE streams, pending server-to-client
requests) are process-local and live in the transport, not here.
"""

from __future__ import annotations

import secrets
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from apimcp.protocol.versions import Revision

DEFAULT_IDLE_TIMEOUT_SECONDS = 3600.0


def new_session_id() -> str:
    """An unguessable id of visible ASCII (0x21-0x7E) only: 256 bits, URL-safe Base64."""
    return secrets.token_urlsafe(32)


@dataclass(slots=True)
class Session:
    id: str
    endpoint: str
    """The endpoint that created the session; it is unknown on every other endpoint."""
    revision: Revision
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)
    initialized: bool = False
    last_seen: float = field(default_factory=time.monotonic)


class SessionStore(ABC):
    """Where session records live; the only place memory and shared storage differ."""

    @abstractmethod
    async def create(self, session: Session) -> None: ...

    @abstractmethod
    async def get(self, session_id: str) -> Session | None:
        """The live session, refreshed; None when unknown, expired or deleted."""

    @abstractmethod
    async def save(self, session: Session) -> None:
        """Persist changes made to a record obtained from `get`."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """End a session; False when it did not exist."""


class MemorySessionStore(SessionStore):
    """Sessions in this process's memory, expired after `idle_timeout` seconds without a request."""

    _SWEEP_EVERY = 256

    def __init__(self, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_SECONDS) -> None:
        if idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive")
        self._sessions: dict[str, Session] = {}
        self._idle_timeout = idle_timeout
        self._creations = 0

    def __len__(self) -> int:
        return len(self._sessions)

    async def create(self, session: Session) -> None:
        self._creations += 1
        if self._creations % self._SWEEP_EVERY == 0:
            self._sweep(time.monotonic())
        self._sessions[session.id] = session

    async def get(self, session_id: str) -> Session | None:
        session = self._sessions.get(session_id)
        if session is None:
            return None
        now = time.monotonic()
        if now - session.last_seen > self._idle_timeout:
            del self._sessions[session_id]
            return None
        session.last_seen = now
        return session

    async def save(self, session: Session) -> None:
        if session.id in self._sessions:
            self._sessions[session.id] = session

    async def delete(self, session_id: str) -> bool:
        return self._sessions.pop(session_id, None) is not None

    def _sweep(self, now: float) -> None:
        expired = [sid for sid, s in self._sessions.items() if now - s.last_seen > self._idle_timeout]
        for sid in expired:
            del self._sessions[sid]
