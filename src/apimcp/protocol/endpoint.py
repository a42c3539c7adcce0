"""The Streamable HTTP endpoint: one ASGI app serving one handler in both eras.

Per request it checks the headers' count and size, Host and Origin (DNS
rebinding), reads the body within its size and time limits, parses it and
bounds its depth, then picks the era: a 2026-07-28 `_meta` envelope or a non-session
MCP-Protocol-Version header goes to the stateless ladder; everything else —
including a plain `initialize` — to the session path. Both eras share one URL.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import orjson

from apimcp.protocol.caller import RequestSource, source_of
from apimcp.protocol.deadlines import SharedDeadline
from apimcp.protocol.depth import too_deep_error
from apimcp.protocol.dispatch import Dispatcher
from apimcp.protocol.errors import HEADER_MISMATCH, INVALID_REQUEST, PARSE_ERROR, SERVER_BUSY
from apimcp.protocol.exchange import (
    BodyTooLarge,
    BodyTooSlow,
    Exchange,
    Receive,
    Scope,
    Send,
    parse_accept,
    read_body,
    run_lifespan,
)
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.headers import MalformedHeader, decode_header_value
from apimcp.protocol.http_sse import HttpSseTransport, names_http_sse, serve_http_sse
from apimcp.protocol.jsonrpc import error_message, is_valid_id
from apimcp.protocol.legacy import SessionEra
from apimcp.protocol.limits import EndpointLimits
from apimcp.protocol.listeners import ChangeHub
from apimcp.protocol.modern import StatelessEra, has_envelope
from apimcp.protocol.options import EndpointOptions
from apimcp.protocol.sessions import StoreUnavailable
from apimcp.protocol.versions import Era, find_revision

log = logging.getLogger("apimcp.protocol")
_WANTED = frozenset(
    {b"host", b"origin", b"accept", b"content-type", b"content-length", b"mcp-session-id", b"mcp-protocol-version",
     b"mcp-method", b"mcp-name", b"last-event-id"}
)  # fmt: skip
_PARAM_PREFIX = b"mcp-param-"
_ONCE = frozenset({b"mcp-session-id", b"mcp-protocol-version", b"mcp-method", b"mcp-name", b"last-event-id"})
"""MCP's headers, which say one thing each: sent twice they are two values (RFC 9110 5.3), and a proxy reading the
first would see another method, tool or session than the engine, which read the last."""
_ALLOW = (b"allow", b"GET, POST, DELETE")
_ALLOW_STATELESS = (b"allow", b"POST")
_CLOSE = ((b"connection", b"close"),)
"""On a refusal made before the body is read: a server would otherwise keep the connection and drain a body
nobody wants (uvicorn does, for as long as it keeps coming)."""


class McpEndpoint:
    """ASGI application serving `handler` over MCP Streamable HTTP."""

    def __init__(self, handler: McpHandler, options: EndpointOptions | None = None, endpoint_id: str = "mcp"):
        self.handler = handler
        self.options = options or EndpointOptions()
        limits = self._limits = self.options.limits
        # Read on every request: plain attributes, not attribute chains.
        self._max_header_count = limits.max_header_count
        self._max_header_bytes = limits.max_header_bytes
        self._max_body_bytes = limits.max_body_bytes
        self._max_depth = limits.max_json_depth
        self._body_deadline = SharedDeadline(limits.body_read_seconds)
        self._body_limit_digits = len(str(limits.max_body_bytes))
        self.changes = ChangeHub()
        """Call `changes.tools_changed()` (etc.) to notify listening clients."""
        dispatcher = Dispatcher(handler, limits.max_list_page_items)
        self._sessions = SessionEra(endpoint_id, dispatcher, self.changes, self.options)
        self._stateless = StatelessEra(dispatcher, self.changes, self.options, endpoint_id)
        self.http_sse = (
            HttpSseTransport(self.handle, limits.max_listeners, limits.max_body_bytes, limits.body_read_seconds)
            if self.options.session_era
            else None
        )
        """The 2024-11-05 HTTP+SSE transport (`GET .../sse`, `POST .../messages`), served through `handle`."""

    def replace_handler(self, handler: McpHandler) -> None:
        """Serve `handler` from now on, keeping sessions and open streams; listeners hear that the lists the old
        or the new handler offers changed."""
        before, after = self.handler.features, handler.features
        dispatcher = Dispatcher(handler, self._limits.max_list_page_items)
        self.handler = handler
        self._sessions.use(dispatcher)
        self._stateless.use(dispatcher)
        if before.tools or after.tools:
            self.changes.tools_changed()
        if before.prompts or after.prompts:
            self.changes.prompts_changed()
        if before.resources or after.resources:
            self.changes.resources_changed()

    def notify_session(self, session_id: str, method: str, params: dict[str, Any]) -> bool:
        """Send a notification to one session's GET stream, wherever it is open, or keep it for the session's next
        one; False when it can go nowhere (no stream here, no other replica, no event store)."""
        return self._sessions.notify(session_id, method, params)

    def shutdown(self) -> None:
        """End every long-lived stream (GET streams, subscriptions) so the server can stop; running tasks end as
        failed, saying the server stopped."""
        self.changes.close_all()
        self._sessions.stop_tasks()
        self._stateless.stop_tasks()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.handle(scope, receive, send, legacy_sse=self.http_sse is not None and names_http_sse(scope))
        elif kind == "lifespan":
            await run_lifespan(receive, send, self.shutdown)

    async def handle(self, scope: Scope, receive: Receive, send: Send, *, legacy_sse: bool = False) -> None:
        """Serve one HTTP request of this endpoint (`legacy_sse`: of its 2024-11-05 HTTP+SSE transport, `GET .../sse`
        or `POST .../messages`, which pass the same checks of headers, Host and Origin first)."""
        raw_headers = scope["headers"]
        if len(raw_headers) > self._max_header_count:
            text = f"More than {self._max_header_count} request headers (max_header_count)"
            await Exchange(send, accepts_json=True, accepts_sse=False).refuse(431, text, _CLOSE)
            return
        headers: dict[bytes, bytes] = {}
        param_headers: dict[bytes, bytes] = {}
        size = 0
        doubled: bytes | None = None
        for name, value in raw_headers:
            size += len(name) + len(value)
            if name in _WANTED:
                if name in headers and name in _ONCE:
                    doubled = name
                headers[name] = value
            elif name.startswith(_PARAM_PREFIX):
                key = name[len(_PARAM_PREFIX) :]
                if key in param_headers:
                    doubled = name
                param_headers[key] = value
        accepts_json, accepts_sse = parse_accept(headers.get(b"accept"))
        exchange = Exchange(send, accepts_json=accepts_json, accepts_sse=accepts_sse)
        if size > self._max_header_bytes:
            text = f"Request headers take {size} bytes, more than {self._max_header_bytes} (max_header_bytes)"
            await exchange.refuse(431, text, _CLOSE)
            return

        security = self.options.security
        host = headers.get(b"host")
        if not security.host_allowed(host.decode("latin-1") if host is not None else None):
            await self._refuse_unread(exchange, receive, headers, 421, "Host not allowed (DNS rebinding protection)")
            return
        origin = headers.get(b"origin")
        if not security.origin_allowed(origin.decode("latin-1") if origin is not None else None):
            await self._refuse_unread(exchange, receive, headers, 403, "Origin not allowed")
            return
        if doubled is not None:
            text = f"The header {doubled.decode('latin-1')} is sent more than once: send it once"
            await self._refuse_unread(exchange, receive, headers, 400, text, HEADER_MISMATCH)
            return
        if legacy_sse:  # its spec too: Origin is checked on every connection
            if self.http_sse is None or not await serve_http_sse(self.http_sse, scope, receive, send):
                await exchange.refuse(405, "HTTP+SSE: GET .../sse, then POST .../messages")
            return

        raw_session = headers.get(b"mcp-session-id")
        session_id = raw_session.decode("latin-1") if raw_session else None
        try:
            raw_version = headers.get(b"mcp-protocol-version")
            header_version = decode_header_value(raw_version) if raw_version is not None else None
        except MalformedHeader:
            header_version = "(malformed)"

        try:
            await self._route(scope, receive, exchange, headers, param_headers, session_id, header_version)
        except StoreUnavailable as exc:
            _say_unavailable(exc)
            if not exchange.streaming and not exchange.finished:
                text = "The server's session store is unavailable for a moment; try again shortly"
                await exchange.refuse(503, text, [(b"retry-after", b"1")], code=SERVER_BUSY)

    async def _route(
        self,
        scope: Scope,
        receive: Receive,
        exchange: Exchange,
        headers: dict[bytes, bytes],
        param_headers: dict[bytes, bytes],
        session_id: str | None,
        header_version: str | None,
    ) -> None:
        method = scope["method"]
        if method == "POST":
            source = source_of(scope)
            await self._post(exchange, receive, headers, param_headers, session_id, header_version, source)
        elif method in ("GET", "DELETE"):
            if _names_stateless_revision(header_version) or not self.options.session_era:
                await exchange.empty(405, [_ALLOW_STATELESS])
            elif method == "GET":
                last_event = headers.get(b"last-event-id")
                resume = last_event.decode("latin-1") if last_event else None
                await self._sessions.get(exchange, receive, session_id, header_version, source_of(scope), resume)
            else:
                await self._sessions.delete(exchange, session_id, header_version, source_of(scope))
        else:
            await exchange.empty(405, [_ALLOW if self.options.session_era else _ALLOW_STATELESS, *_CLOSE])

    async def _refuse_unread(
        self, exchange: Exchange, receive: Receive, headers: dict[bytes, bytes], status: int, text: str,
        code: int = INVALID_REQUEST,
    ) -> None:  # fmt: skip
        """Refuse a request whatever its body says. A body within the limits is read and dropped first, and the
        connection kept: closing it on unread bytes makes the kernel reset it, and the client may lose the answer.
        A larger or slower one is not waited for: the answer says Connection: close."""
        drained = False
        if _within_limits(headers, self._limits):
            try:
                await read_body(receive, self._max_body_bytes, self._body_deadline)
                drained = True
            except (BodyTooLarge, BodyTooSlow):
                pass
        await exchange.refuse(status, text, () if drained else _CLOSE, code=code)

    async def _post(
        self,
        exchange: Exchange,
        receive: Receive,
        headers: dict[bytes, bytes],
        param_headers: dict[bytes, bytes],
        session_id: str | None,
        header_version: str | None,
        source: RequestSource,
    ) -> None:
        if not (exchange.accepts_json or exchange.accepts_sse):
            text = "Accept must include application/json or text/event-stream"
            await self._refuse_unread(exchange, receive, headers, 406, text)
            return
        content_type = headers.get(b"content-type")
        if content_type is not None and not content_type.lower().startswith(b"application/json"):
            await self._refuse_unread(exchange, receive, headers, 415, "Content-Type must be application/json")
            return
        limits = self._limits
        announced = headers.get(b"content-length")
        # Fewer digits than the limit has cannot announce more: most requests stop at len().
        if announced is not None and len(announced) >= self._body_limit_digits and _more_than(announced, limits):
            await exchange.refuse(413, _too_large(limits), _CLOSE)
            return
        try:
            body = await read_body(receive, self._max_body_bytes, self._body_deadline)
        except BodyTooLarge:
            await exchange.refuse(413, _too_large(limits), _CLOSE)  # the rest of the body is still on its way
            return
        except BodyTooSlow:
            text = f"The request body did not arrive within {limits.body_read_seconds:g} seconds (body_read_seconds)"
            await exchange.refuse(408, text, _CLOSE)
            return
        try:
            payload: Any = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith("depth limit"):  # orjson stops parsing beyond 1024 levels
                text = f"The body nests objects and arrays deeper than {limits.max_json_depth} levels"
                await exchange.refuse(400, text, data={"maxDepth": limits.max_json_depth})
            else:
                await exchange.refuse(400, "Parse error: the body is not valid JSON", code=PARSE_ERROR)
            return
        # Each level takes an opening and a closing bracket: a short body, or one with few brackets,
        # cannot nest that deep, and only a body that might is walked.
        depth = self._max_depth
        if len(body) > 2 * depth and body.count(b"{") + body.count(b"[") > depth:
            too_deep = too_deep_error(payload, depth)
            if too_deep is not None:
                await exchange.json(400, too_deep)
                return
        if isinstance(payload, list) and _names_stateless_revision(header_version):
            text = "JSON-RPC batches are not part of MCP 2026-07-28: send one message per request"
            await exchange.json(400, error_message(None, INVALID_REQUEST, text))
            return
        if self._is_stateless(payload, header_version, session_id):
            if not self.options.stateless_era:
                text = "This endpoint serves session-based MCP only"
                await exchange.json(400, error_message(_request_id(payload), INVALID_REQUEST, text))
                return
            await self._stateless.post(exchange, receive, payload, headers, param_headers, source)
        elif not self.options.session_era:
            await exchange.json(
                400,
                error_message(
                    _request_id(payload),
                    INVALID_REQUEST,
                    "This endpoint serves MCP 2026-07-28 only: send MCP-Protocol-Version: 2026-07-28 "
                    "and params._meta on every request",
                ),
            )
        else:
            await self._sessions.post(exchange, payload, session_id, header_version, source)

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


_said_at = [-math.inf]


def _say_unavailable(exc: StoreUnavailable) -> None:
    """Log that the shared store is away, at most every 10 seconds (an outage would flood the log)."""
    now = time.monotonic()
    if now - _said_at[0] >= 10:
        _said_at[0] = now
        log.warning("%s: requests needing it are answered 503 until it is back", exc)


def _request_id(payload: object) -> str | int | None:
    """The id of a parsed message, when it has a valid one."""
    raw = payload.get("id") if isinstance(payload, dict) else None
    return raw if is_valid_id(raw) else None


def _too_large(limits: EndpointLimits) -> str:
    return f"Request body larger than {limits.max_body_bytes} bytes (max_body_bytes)"


def _within_limits(headers: dict[bytes, bytes], limits: EndpointLimits) -> bool:
    announced = headers.get(b"content-length")
    return announced is None or not _more_than(announced, limits)


def _more_than(announced: bytes, limits: EndpointLimits) -> bool:
    """Whether a Content-Length value announces more than the body limit (a malformed one does not)."""
    try:
        return int(announced) > limits.max_body_bytes
    except ValueError:  # not a number, or more digits than int() reads: reading the body decides
        return False


def _names_stateless_revision(header_version: str | None) -> bool:
    if header_version is None:
        return False
    revision = find_revision(header_version)
    return revision is not None and revision.era is Era.STATELESS
