"""What a backend endpoint and its credentials may look like, per kind of service.

REST and GraphQL backends are http(s) URLs; a gRPC backend is `host:port`,
`grpc://host:port` (plaintext) or `grpcs://host:port` (TLS), and takes its
credentials as metadata, so an API key can only be a header with a valid
metadata name. A service may need several credentials at once (an API key and
a client id), as long as no two of them set the same header, query parameter or
cookie. Checked where plans and configurations are written, so that a gateway is
never handed something it cannot call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_HTTP = re.compile(r"^https?://[^\s/]+")
_HOST_PORT = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):\d{1,5}"
_GRPC = re.compile(rf"^((grpcs?://)?{_HOST_PORT}|(dns|ipv4|ipv6|unix):\S+)$")
_METADATA_KEY = re.compile(r"^[0-9a-z_.-]+$")


def endpoint_problem(kind: str, endpoint: str) -> str | None:
    """Why `endpoint` cannot be the backend of a service of `kind` ("openapi", "graphql" or "grpc"), or None."""
    if kind == "grpc":
        if not _GRPC.match(endpoint):
            return "a gRPC backend is host:port, grpc://host:port or grpcs://host:port"
        return None
    if not _HTTP.match(endpoint):
        return "the backend endpoint must be an http:// or https:// URL"
    return None


def api_key_problem(kind: str, name: str, location: str) -> str | None:
    """Why an API key `name` in `location` cannot reach a backend of `kind`, or None."""
    if kind != "grpc":
        return None
    if location != "header":
        return f"gRPC carries credentials in metadata only: an API key in the {location} cannot be sent"
    key = name.lower()
    if not _METADATA_KEY.match(key) or key.endswith("-bin") or key.startswith("grpc-"):
        return f"{name!r} cannot be a gRPC metadata key (letters, digits, '-', '_', '.'; not grpc-* nor *-bin)"
    return None


def credential_slot(kind: str, fields: Mapping[str, Any]) -> tuple[str, str]:
    """Where a credential of `kind` goes: ("header", "Authorization"), ("query", "key")... Bearer, Basic and
    OAuth client credentials all set the Authorization header."""
    if kind == "api_key":
        return str(fields.get("location") or "header"), str(fields["name"])
    return "header", "Authorization"


def clash_problem(credentials: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str | None:
    """Why credentials given as (label, kind, fields) cannot go together, or None: two of them would set the
    same header (names compared without case), query parameter or cookie."""
    seen: dict[tuple[str, str], str] = {}
    for label, kind, fields in credentials:
        location, name = credential_slot(kind, fields)
        key = (location, name.lower() if location == "header" else name)
        if key in seen:
            return f"{seen[key]} and {label} would both set the {location} {name!r}: a request carries only one"
        seen[key] = label
    return None
