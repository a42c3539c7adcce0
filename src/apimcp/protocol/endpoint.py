"""The Streamable HTTP endpoint: one ASGI app serving one handler in both eras.

Per request it checks Host and Origin (DNS rebinding), reads and parses the
body, then picks the era: a 2026-07-28 `_meta` envelope or a non-session
MCP-Protocol-Version header goes to the stateless ladder; everything else —
including a plain `initialize` — to the session path. Both eras share one URL.
"""

from __future__ import annotations

from typing import Any

import orjson

from apimcp.protocol.dispatch import Dispatcher
from apimcp.protocol.errors import INVALID_REQUEST, PARSE_ERROR
from apimcp.protocol.exchange import Exchange, Receive, Scope, Send, parse_accept, read_body, run_lifespan
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.headers import MalformedHeader, decode_header_value
from apimcp.protocol.jsonrpc import error_message
from apimcp.protocol.legacy import SessionEra
from apimcp.protocol.listeners import ChangeHub
from apimcp.protocol.modern import StatelessEra, has_envelope
from apimcp.protocol.options import EndpointOptions
from apimcp.protocol.versions import Era, find_revision

_WANTED = frozenset(
    {b"host", b"origin", b"accept", b"content-type", b"mcp-session-id", b"mcp-protocol-version", b"mcp-method",
     b"mcp-name"}
)  # fmt: skip
_PARAM_PREFIX = b"mcp-param-"
_ALLOW = (b"allow", b"GET, POST, DELETE")
_ALLOW_STATELESS = (b"allow", b"POST")


class McpEndpoint:
    """ASGI application serving `handler` over MCP Streamable HTTP."""

    def __init__(self, handler: McpHandler, options: EndpointOptions | None = None, endpoint_id: str = "mcp"):
        self.handler = handler
        self.options = options or EndpointOptions()
        self.changes = ChangeHub()
        """Call `changes.tools_changed()` (etc.) to notify listening clients."""
        dispatcher = Dispatcher(handler)
        self._sessions = SessionEra(endpoint_id, dispatcher, self.changes, self.options)
        self._stateless = StatelessEra(dispatcher, self.changes, self.options)

    def replace_handler(self, handler: McpHandler) -> None:
        """Serve `handler` from now on, keeping sessions and open streams; listeners hear that lists changed."""
        dispatcher = Dispatcher(handler)
        self.handler = handler
        self._sessions.use(dispatcher)
        self._stateless.use(dispatcher)
        self.changes.tools_changed()
        self.changes.prompts_changed()
        self.changes.resources_changed()

    def shutdown(self) -> None:
        """End every long-lived stream (GET streams, subscriptions) so the server can stop."""
        self.changes.close_all()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.handle(scope, receive, send)
        elif kind == "lifespan":
            await run_lifespan(receive, send, self.shutdown)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: dict[bytes, bytes] = {}
        param_headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _WANTED:
                headers[name] = value
            elif name.startswith(_PARAM_PREFIX):
                param_headers[name[len(_PARAM_PREFIX) :]] = value
        accepts_json, accepts_sse = parse_accept(headers.get(b"accept"))
        exchange = Exchange(send, accepts_json=accepts_json, accepts_sse=accepts_sse)

        security = self.options.security
        host = headers.get(b"host")
        if not security.host_allowed(host.decode("latin-1") if host is not None else None):
            await exchange.text(421, "Host not allowed (DNS rebinding protection)")
            return
        origin = headers.get(b"origin")
        if not security.origin_allowed(origin.decode("latin-1") if origin is not None else None):
            await exchange.json(403, error_message(None, INVALID_REQUEST, "Origin not allowed"))
            return

        raw_session = headers.get(b"mcp-session-id")
        session_id = raw_session.decode("latin-1") if raw_session else None
        try:
            raw_version = headers.get(b"mcp-protocol-version")
            header_version = decode_header_value(raw_version) if raw_version is not None else None
        except MalformedHeader:
            header_version = "(malformed)"
        stateless_header = _names_stateless_revision(header_version)

        method = scope["method"]
        if method == "POST":
            await self._post(exchange, receive, headers, param_headers, session_id, header_version)
        elif method in ("GET", "DELETE"):
            if stateless_header or not self.options.session_era:
                await exchange.empty(405, [_ALLOW_STATELESS])
            elif method == "GET":
                await self._sessions.get(exchange, receive, session_id, header_version)
            else:
                await self._sessions.delete(exchange, session_id, header_version)
        else:
            await exchange.empty(405, [_ALLOW if self.options.session_era else _ALLOW_STATELESS])

    async def _post(
        self,
        exchange: Exchange,
        receive: Receive,
        headers: dict[bytes, bytes],
        param_headers: dict[bytes, bytes],
        session_id: str | None,
        header_version: str | None,
    ) -> None:
        if not (exchange.accepts_json or exchange.accepts_sse):
            await exchange.text(406, "Accept must include application/json or text/event-stream")
            return
        content_type = headers.get(b"content-type")
        if content_type is not None and not content_type.lower().startswith(b"application/json"):
            await exchange.text(415, "Content-Type must be application/json")
            return
        body = await read_body(receive, self.options.max_body_bytes)
        if body is None:
            await exchange.text(413, f"Request body larger than {self.options.max_body_bytes} bytes")
            return
        try:
            payload: Any = orjson.loads(body)
        except orjson.JSONDecodeError:
            await exchange.json(400, error_message(None, PARSE_ERROR, "Parse error: the body is not valid JSON"))
            return
        if self._is_stateless(payload, header_version, session_id):
            if not self.options.stateless_era:
                await exchange.json(
                    400, error_message(None, INVALID_REQUEST, "This endpoint serves session-based MCP only")
                )
                return
            await self._stateless.post(exchange, receive, payload, headers, param_headers)
        elif not self.options.session_era:
            await exchange.json(
                400,
                error_message(
                    payload.get("id") if isinstance(payload, dict) else None,
                    INVALID_REQUEST,
                    "This endpoint serves MCP 2026-07-28 only: send MCP-Protocol-Version: 2026-07-28 "
                    "and params._meta on every request",
                ),
            )
        else:
            await self._sessions.post(exchange, payload, session_id, header_version)

    def _is_stateless(self, payload: object, header_version: str | None, session_id: str | None) -> bool:
        if has_envelope(payload):
            return True
        if header_version is None or isinstance(payload, list):
            return False
        if _names_stateless_revision(header_version):
            return True
        # An unknown version: a session's request gets the session-era 400; anything else,
        # except a plain initialize, is a modern request to be told which versions exist.
        is_initialize = isinstance(payload, dict) and payload.get("method") == "initialize"
        return session_id is None and not is_initialize and find_revision(header_version) is None


def _names_stateless_revision(header_version: str | None) -> bool:
    if header_version is None:
        return False
    revision = find_revision(header_version)
    return revision is not None and revision.era is Era.STATELESS
