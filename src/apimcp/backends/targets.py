"""What a backend endpoint may look like, per kind of service.

REST and GraphQL backends are http(s) URLs; a gRPC backend is `host:port`,
`grpc://host:port` (plaintext) or `grpcs://host:port` (TLS).
"""

from __future__ import annotations

import re

_HTTP = re.compile(r"^https?://[^\s/]+")
_GRPC = re.compile(r"^(grpcs?://)?[^\s/:]+(:\d+)?/?$")


def endpoint_problem(kind: str, endpoint: str) -> str | None:
    """Why `endpoint` cannot be the backend of a service of `kind` ("openapi", "graphql" or "grpc"), or None."""
    if kind == "grpc":
        if not _GRPC.match(endpoint):
            return "a gRPC backend is host:port, grpc://host:port or grpcs://host:port"
        return None
    if not _HTTP.match(endpoint):
        return "the backend endpoint must be an http:// or https:// URL"
    return None
