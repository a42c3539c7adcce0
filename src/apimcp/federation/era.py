"""Which era an upstream MCP server speaks, decided the same way at import and in the gateway.

First a 2026-07-28 `server/discover`: a server that answers it with 2026-07-28 among its supported versions
is called statelessly, every request on its own. Any other answer (an error, 400, 404, 405, a revision list
without it) means a session-era server: initialize offers 2025-11-25, the server answers the revision it
speaks (back to 2024-11-05), and its `Mcp-Session-Id`, if it gives one, goes with every later request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from apimcp.federation.message_channel import MessageChannel
from apimcp.mcp_client import requests
from apimcp.mcp_client.answers import UpstreamError, result_of
from apimcp.mcp_client.headers import Negotiated, headers_for, usable_session_id
from apimcp.protocol.versions import find_revision

DISCOVER_ID = 1
INITIALIZE_ID = 1


@dataclass(frozen=True, slots=True)
class Era:
    """How to speak to one upstream: statelessly, or within the session `negotiated` names."""

    stateless: bool
    negotiated: Negotiated
    server_info: Mapping[str, Any]
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    """What the server said it offers (`prompts`, `resources`...)."""
    channel: MessageChannel | None = None
    """What carries the session: the stream of a server of the 2024-11-05 HTTP+SSE transport, or a stdio server's
    pipes (None: Streamable HTTP)."""

    @property
    def ends_sessions(self) -> bool:
        """Whether a session no longer needed is ended (DELETE): from 2025-06-18 on. Servers of the first
        Streamable HTTP generation (the Python SDK 1.8, 2024-11-05 and 2025-03-26) fail as a whole on it, so
        their sessions are left to expire."""
        return self.negotiated.session_id is not None and self.negotiated.version is not None

    def offers(self, feature: str) -> bool:
        return isinstance(self.capabilities.get(feature), Mapping)

    def headers(self, message: Mapping[str, Any], extra: Mapping[str, str]) -> dict[str, str]:
        return headers_for(message, self.negotiated, extra)


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request to send: its body and headers (the caller adds credentials)."""

    message: dict[str, Any]
    body: bytes
    headers: dict[str, str]


def _exchange(message: dict[str, Any], negotiated: Negotiated, extra: Mapping[str, str]) -> Exchange:
    return Exchange(message, orjson.dumps(message), headers_for(message, negotiated, extra))


def discover(extra: Mapping[str, str]) -> Exchange:
    return _exchange(requests.request(DISCOVER_ID, "server/discover", None, stateless=True), Negotiated(), extra)


def stateless_era(status: int, content_type: str, body: bytes) -> Era | None:
    """The stateless era when `server/discover` was answered with 2026-07-28 supported; None otherwise."""
    if status != 200:
        return None
    try:
        result = result_of(body, content_type, DISCOVER_ID)
    except UpstreamError:
        return None
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or requests.STATELESS_REVISION not in versions:
        return None
    meta = result.get("_meta")
    info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, Mapping) else None
    return Era(True, Negotiated(), info if isinstance(info, Mapping) else {}, _capabilities(result))


def initialize(extra: Mapping[str, str]) -> Exchange:
    return _exchange(requests.initialize(INITIALIZE_ID), Negotiated(), extra)


def session_era(status: int, headers: Mapping[str, str], content_type: str, body: bytes) -> Era:
    """The session an initialize answer opened; `UpstreamError` when it opened none."""
    if status != 200:
        raise UpstreamError(f"the server refused initialize (HTTP {status})")
    return opened_era(result_of(body, content_type, INITIALIZE_ID), headers)


def opened_era(result: Mapping[str, Any], headers: Mapping[str, str], channel: MessageChannel | None = None) -> Era:
    """The era an initialize result opened (its session id in `headers`, or on `channel` for HTTP+SSE)."""
    version = result.get("protocolVersion")
    revision = find_revision(version)
    if revision is None or not isinstance(version, str):
        raise UpstreamError(f"the server speaks MCP revision {str(version)[:40]!r}, which apimcp does not")
    if revision.version == requests.STATELESS_REVISION:
        raise UpstreamError("the server answered initialize with 2026-07-28, which has no initialize")
    session_id = next((v for k, v in headers.items() if k.lower() == "mcp-session-id"), None)
    if not usable_session_id(session_id):
        raise UpstreamError("the server's session id is not visible ASCII, as MCP asks: it cannot be sent back")
    info = result.get("serverInfo")
    # 2024-11-05 and 2025-03-26 clients send no MCP-Protocol-Version header
    header_version = version if version >= "2025-06-18" else None
    info = info if isinstance(info, Mapping) else {}
    if channel is not None:  # the endpoint URL names the session; no header carries the version
        return Era(False, Negotiated(), info, _capabilities(result), channel)
    return Era(False, Negotiated(session_id, header_version), info, _capabilities(result))


def _capabilities(result: Mapping[str, Any]) -> Mapping[str, Any]:
    capabilities = result.get("capabilities")
    return capabilities if isinstance(capabilities, Mapping) else {}


def initialized(era: Era, extra: Mapping[str, str]) -> tuple[bytes, dict[str, str]]:
    """The `notifications/initialized` that completes a session's opening."""
    return orjson.dumps(requests.INITIALIZED), era.headers(requests.INITIALIZED, extra)


def call(
    era: Era,
    request_id: int,
    method: str,
    params: Mapping[str, Any],
    extra: Mapping[str, str],
    capabilities: Mapping[str, Any] | None = None,
) -> Exchange:
    """A request of `era`: with the `_meta` envelope when stateless (declaring `capabilities`, the client's own,
    when given: a stateless upstream then asks only what the client can answer), in the session otherwise."""
    # every log message is asked for: each client's own level filters what it receives (`RequestContext.log`)
    log_level = "debug" if era.stateless and era.offers("logging") else None
    message = requests.request(
        request_id, method, params, stateless=era.stateless, capabilities=capabilities, log_level=log_level
    )
    return _exchange(message, era.negotiated, extra)


SSE_STATUSES = (404, 405)
"""What a server of the 2024-11-05 HTTP+SSE transport answers a POST to its stream's URL."""


def initialize_params() -> dict[str, Any]:
    params: dict[str, Any] = requests.initialize(INITIALIZE_ID)["params"]
    return params
