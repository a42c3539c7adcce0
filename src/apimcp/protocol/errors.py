"""Errors the engine turns into JSON-RPC error responses.

Handlers raise these; the transport picks the HTTP status per era and the
dialect functions pick the exact code and data per revision (for example a
missing resource is -32002 in session revisions and -32602 in 2026-07-28).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_BUSY = -32000
"""Implementation-defined: no room for this now (HTTP 429 or 503 with Retry-After)."""
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
SESSION_RESOURCE_NOT_FOUND = -32002
SESSION_URL_ELICITATION_REQUIRED = -32042
REQUEST_CANCELLED = -32800


class McpError(Exception):
    """A JSON-RPC error: code, human-readable message and optional data."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(message: str, data: Any = None) -> McpError:
    return McpError(INVALID_PARAMS, message, data)


def method_not_found(method: str) -> McpError:
    return McpError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


class HttpRefusal(McpError):
    """A refusal the HTTP response itself must carry: this status and these headers (a token that lacks a scope:
    403 with `WWW-Authenticate`). Inside a batch, or once the response streams, only the JSON-RPC error is sent.
    `reason` names the refusal for observers (the challenge's error, `insufficient_scope`)."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        headers: Sequence[tuple[bytes, bytes]] = (),
        data: Any = None,
        *,
        reason: str | None = None,
    ) -> None:
        super().__init__(code, message, data)
        self.status = status
        self.headers = tuple(headers)
        self.reason = reason


class ResourceNotFound(McpError):
    """A resources/read (or template) target that does not exist."""

    def __init__(self, uri: str, reason: str | None = None) -> None:
        """`reason` says why a URI that looks readable is not (it reaches the client)."""
        message = f"Resource not found: {uri}" + (f" ({reason})" if reason else "")
        super().__init__(INVALID_PARAMS, message, {"uri": uri})
        self.uri = uri


class MissingClientCapability(McpError):
    """The request needs a client capability the client did not declare."""

    def __init__(self, capabilities: Mapping[str, Any], message: str | None = None) -> None:
        names = ", ".join(sorted(capabilities))
        super().__init__(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            message or f"This request requires the client capability: {names}",
            {"requiredCapabilities": dict(capabilities)},
        )
        self.capabilities = dict(capabilities)


class UrlElicitationRequired(McpError):
    """The user must complete one or more URL-mode elicitations before retrying.

    Each elicitation is a mapping with `message`, `url` and `elicitationId`.
    """

    def __init__(self, elicitations: Sequence[Mapping[str, Any]], message: str | None = None) -> None:
        super().__init__(
            SESSION_URL_ELICITATION_REQUIRED,
            message or "This request requires more information from the user.",
            {"elicitations": [{"mode": "url", **e} for e in elicitations]},
        )
        self.elicitations = [dict(e) for e in elicitations]
