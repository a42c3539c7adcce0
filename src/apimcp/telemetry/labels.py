"""Bounded label values: what a client sends never becomes a new time series.

A Prometheus series is kept for every distinct set of label values, so every label here takes its value from a
fixed set (methods of the MCP specification, the engine's outcomes, JSON-RPC error codes of the reserved
ranges, the reasons a request is refused at an exposition's door) or from the snapshot (exposition names);
anything else is `other`. Span attributes may carry more (the tool a request names) but are cut to a bounded
length.
"""

from __future__ import annotations

from apimcp.protocol.observe import without_query

MCP_METHODS = frozenset(
    {"initialize", "ping", "server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get",
     "resources/list", "resources/templates/list", "resources/read", "resources/subscribe",
     "resources/unsubscribe", "completion/complete", "logging/setLevel", "subscriptions/listen", "tasks/get",
     "tasks/list", "tasks/result", "tasks/cancel", "tasks/update"}
)  # fmt: skip
OTHER = "other"
MAX_ATTRIBUTE_CHARS = 256
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


REFUSAL_REASONS = frozenset(
    {"missing_api_key", "invalid_api_key", "missing_bearer_token", "malformed_token", "forbidden_audience",
     "invalid_token", "invalid_jwks_uri", "introspection_failed", "missing_scope", "caller_rate_limit",
     "exposition_rate_limit"}
)  # fmt: skip
"""Why an exposition's guard (`auth/guard.py`, `auth/verifier.py`) or its rate limits refuse a request."""


def method_label(method: str) -> str:
    return method if method in MCP_METHODS else OTHER


def error_code_label(code: int | None) -> str:
    """JSON-RPC's own codes and the server range (-32099..-32000, where MCP's live): at most 105 values."""
    if code is None:
        return "none"
    if -32099 <= code <= -32000 or code in (-32700, -32600, -32601, -32602, -32603):
        return str(code)
    return OTHER


def refusal_label(reason: str) -> str:
    return reason if reason in REFUSAL_REASONS else OTHER


def http_method_label(method: str) -> str:
    return method if method in HTTP_METHODS else OTHER


def bounded(text: str) -> str:
    """A client's text as a span attribute: cut to MAX_ATTRIBUTE_CHARS."""
    return text if len(text) <= MAX_ATTRIBUTE_CHARS else text[: MAX_ATTRIBUTE_CHARS - 1] + "…"


def resource_target(uri: str) -> str:
    """A resource URI without its query, fragment or user information (where a credential may be), bounded."""
    return bounded(without_query(uri))
