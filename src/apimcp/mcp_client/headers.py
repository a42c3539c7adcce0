"""The HTTP headers one JSON-RPC message needs on its way to a Streamable HTTP endpoint.

Session era: `Mcp-Session-Id` and `MCP-Protocol-Version` once initialize has negotiated them. 2026-07-28:
each request names its own version in `_meta`, and the endpoint wants it mirrored, with `Mcp-Method` and
`Mcp-Name`, in headers.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimcp.protocol.modern import TASK_NAME_PARAMS
from apimcp.protocol.tool_headers import HeaderParam

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
NAME_PARAMS = TASK_NAME_PARAMS
ACCEPT = "application/json, text/event-stream"


@dataclass(slots=True)
class Negotiated:
    """What initialize settled for a session-era client (nothing for a 2026-07-28 one)."""

    session_id: str | None = None
    version: str | None = None


def usable_session_id(session_id: str | None) -> bool:
    """Whether a server's session id is absent or visible ASCII only, as the specification asks: another could not
    be sent back in a header."""
    return session_id is None or (bool(session_id) and all("!" <= char <= "~" for char in session_id))


def header_value(value: str) -> str:
    """A header value as MCP carries it: plain when printable ASCII, else base64 in `=?base64?...?=`."""
    if value.isascii() and value.isprintable() and value == value.strip():
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def headers_for(message: Mapping[str, Any], negotiated: Negotiated, extra: Mapping[str, str]) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, **extra}
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    stateless_version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    method = message.get("method")
    if isinstance(stateless_version, str):
        headers["MCP-Protocol-Version"] = header_value(stateless_version)  # the client's: a line break is no header
        if isinstance(method, str):
            headers["Mcp-Method"] = header_value(method)
            name_param = NAME_PARAMS.get(method)
            target = params.get(name_param) if name_param is not None and isinstance(params, dict) else None
            if isinstance(target, str):
                headers["Mcp-Name"] = header_value(target)
        return headers
    if negotiated.session_id is not None:
        headers["Mcp-Session-Id"] = negotiated.session_id
    if negotiated.version is not None:
        headers["MCP-Protocol-Version"] = negotiated.version
    return headers


def param_headers(params: Sequence[HeaderParam], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The `Mcp-Param-{Name}` headers a 2026-07-28 call of a tool needs: the value of every argument its input
    schema marks with `x-mcp-header` (`params`, from `protocol.tool_headers.header_params`), as the server compares
    it with the body."""
    headers = {}
    for param in params:
        value: object = arguments
        for key in param.path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        headers[f"Mcp-Param-{param.label}"] = header_value(text)
    return headers
