"""What one request, session or stream may cost an endpoint, with safe defaults.

Each limit is checked before the work it bounds is done (headers before the
body is read, the announced Content-Length before reading, depth before
dispatch, the batch size before any message runs) and is answered with the
status that names the problem: 413 body, 408 slow body, 431 headers, 429 too
many at once for one session, 503 + Retry-After when the endpoint is full,
400 for a payload the engine will not process. How many sessions a store
holds, and for how long, is a property of the store (see sessions.py).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

ORJSON_MAX_DEPTH = 254
"""orjson refuses to encode values nested deeper than this (a TypeError, not a JSON error)."""
_DEPTH_HEADROOM = 54
"""Levels handlers and the engine may add around a client's value (envelopes, results, requestState)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EndpointLimits:
    """Bounds on the work and memory one client can cause; every field must be positive."""

    max_body_bytes: int = 4 * 1024 * 1024
    """Request body size: 413, decided from Content-Length when announced, else while reading."""
    body_read_seconds: float = 30.0
    """Total time to receive a request body that arrives in pieces, from its first piece (not per read): 408
    past it (checked once a second). How long the first piece may take is the server's to bound."""
    max_header_count: int = 100
    """Request header lines: 431 past it."""
    max_header_bytes: int = 32 * 1024
    """Sum of the names and values of the request's headers: 431 past it."""
    max_json_depth: int = 64
    """Nesting of objects and arrays in a request body: 400 with -32602 (-32600 outside params)."""
    max_batch_messages: int = 100
    """Messages in one JSON-RPC batch (2025-03-26 sessions): 400 with -32600."""
    max_batch_response_bytes: int = 16 * 1024 * 1024
    """Encoded responses of one batch; requests after the budget is spent get an error, not run."""
    max_session_bytes: int = 16 * 1024
    """A session record: the JSON of initialize's capabilities and clientInfo, plus subscribed URIs; and the
    resource URIs one subscriptions/listen stream may follow."""
    max_requests_per_session: int = 32
    """Requests of one session in progress at once (each may hold an SSE stream): 429 past it."""
    max_listeners: int = 1000
    """Open GET streams and subscriptions/listen streams of one endpoint: 503 past it."""
    max_list_page_items: int = 10_000
    """Items of one page of tools/list, prompts/list, resources/list and resources/templates/list: longer lists
    come in pages (`nextCursor`)."""

    def __post_init__(self) -> None:
        for item in fields(self):
            if getattr(self, item.name) <= 0:
                raise ValueError(f"{item.name} must be positive")
        if self.max_json_depth > ORJSON_MAX_DEPTH - _DEPTH_HEADROOM:
            # Deeper values could be accepted and then fail to encode inside a handler.
            raise ValueError(f"max_json_depth must be at most {ORJSON_MAX_DEPTH - _DEPTH_HEADROOM}")
