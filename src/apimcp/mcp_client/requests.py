"""JSON-RPC requests to an MCP server, in the era it speaks.

A session-era server learns the client's revision once, at initialize; a 2026-07-28 server on every request,
from the `_meta` envelope (protocol version, the client's capabilities and who it is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp import __version__
from apimcp.mcp_client.headers import PROTOCOL_VERSION_KEY

STATELESS_REVISION = "2026-07-28"
SESSION_REVISION = "2025-11-25"
"""What a session-era initialize offers: the newest session revision; the server answers the one it speaks."""
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
CLIENT_INFO = {"name": "apimcp", "version": __version__}

INITIALIZED: Mapping[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CAPABILITIES: Mapping[str, Any] = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
"""What the gateway declares to the servers it fronts: it relays these requests to its own clients (each client's
own capabilities decide, when it is asked, whether it can answer)."""


def request(
    request_id: int,
    method: str,
    params: Mapping[str, Any] | None,
    *,
    stateless: bool,
    capabilities: Mapping[str, Any] | None = None,
    log_level: str | None = None,
) -> dict[str, Any]:
    """A request; a stateless one carries the `_meta` envelope (beside any `_meta` the params already have),
    declaring `capabilities` (default: `CAPABILITIES`) and asking for log messages from `log_level` up."""
    body = dict(params or {})
    if stateless:
        meta = body.get("_meta")
        body["_meta"] = {
            **(meta if isinstance(meta, Mapping) else {}),
            PROTOCOL_VERSION_KEY: STATELESS_REVISION,
            CLIENT_CAPABILITIES_KEY: dict(CAPABILITIES if capabilities is None else capabilities),
            CLIENT_INFO_KEY: CLIENT_INFO,
            **({LOG_LEVEL_KEY: log_level} if log_level is not None else {}),
        }
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def initialize(request_id: int) -> dict[str, Any]:
    """A session-era initialize offering `SESSION_REVISION` and `CAPABILITIES`."""
    params = {"protocolVersion": SESSION_REVISION, "capabilities": dict(CAPABILITIES), "clientInfo": CLIENT_INFO}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
