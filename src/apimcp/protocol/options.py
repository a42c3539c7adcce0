"""How an endpoint behaves: security, session storage, request-state keys and limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from apimcp.protocol.event_store import EventStore, MemoryEventStore
from apimcp.protocol.limits import EndpointLimits
from apimcp.protocol.relay import NO_RELAY, SessionRelay
from apimcp.protocol.request_state import RequestStateSealer
from apimcp.protocol.security import TransportSecurity
from apimcp.protocol.sessions import MemorySessionStore, SessionStore
from apimcp.protocol.tasks.store import MemoryTaskStore, TaskStore


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointOptions:
    """Settings of an MCP endpoint; share one instance to share its stores between endpoints."""

    security: TransportSecurity = field(default_factory=TransportSecurity)
    sessions: SessionStore = field(default_factory=MemorySessionStore)
    relay: SessionRelay = NO_RELAY
    """How what a client sends for a session reaches the replica serving it (with a shared `sessions` store)."""
    events: EventStore | None = field(default_factory=MemoryEventStore)
    """Where session streams' events wait for a client that resumes (None: streams carry no event ids)."""
    tasks: TaskStore = field(default_factory=MemoryTaskStore)
    """Where tasks live (for handlers whose features include tasks); shared, any replica answers for them."""
    request_state: RequestStateSealer = field(default_factory=RequestStateSealer)
    limits: EndpointLimits = field(default_factory=EndpointLimits)
    """Bounds on requests, batches, session records and streams (the session count: see `sessions`)."""
    client_request_timeout: float = 300.0
    """Seconds a handler waits for the client to answer an elicitation, sampling or roots request."""
    keepalive_seconds: float = 15.0
    """Seconds between SSE comment lines on otherwise quiet long-lived streams."""
    session_era: bool = True
    """Serve 2024-11-05 ... 2025-11-25 clients (initialize + MCP-Session-Id)."""
    stateless_era: bool = True
    """Serve 2026-07-28 clients (per-request _meta, server/discover)."""

    def __post_init__(self) -> None:
        if not (self.session_era or self.stateless_era):
            raise ValueError("an endpoint must serve at least one era")
        if self.client_request_timeout <= 0 or self.keepalive_seconds <= 0:
            raise ValueError("timeouts must be positive")
