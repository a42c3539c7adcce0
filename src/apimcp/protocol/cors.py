"""CORS for MCP endpoints, so that an MCP client running in a browser page can connect.

Only origins an operator lists are answered (exact `scheme://host[:port]`; none by default, besides the origin of
the control plane a gateway follows, whose web console calls it: `gateway/serve.py`): a preflight
`OPTIONS` from one is answered 204 with the methods and request headers MCP uses, and every response to it
carries `Access-Control-Allow-Origin` and exposes the MCP response headers a client must read
(`Mcp-Session-Id`, `MCP-Protocol-Version`, `WWW-Authenticate` for OAuth discovery, ...). A preflight from any
other origin is refused 403 and other responses carry no CORS headers, so the browser keeps the page out.
The DNS-rebinding check (`security.py`) still applies to every request: a listed origin is added to the
origins it accepts, nothing else is. No credentials mode: MCP clients send tokens in `Authorization`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from apimcp.protocol.exchange import AsgiMessage, Receive, Scope, Send

AsgiCall = Callable[[Scope, Receive, Send], Awaitable[None]]

ALLOWED_METHODS = b"GET, POST, DELETE, OPTIONS"
ALLOWED_HEADERS = frozenset(
    {"accept", "authorization", "content-type", "last-event-id", "mcp-method", "mcp-name", "mcp-protocol-version",
     "mcp-session-id", "x-api-key", "x-reshapr-key"}
)  # fmt: skip
PARAM_HEADER_PREFIX = "mcp-param-"
EXPOSED_HEADERS = b"Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Link, Retry-After"
MAX_AGE_SECONDS = b"600"
MAX_REQUESTED_HEADERS = 64


def normalized_origin(text: str) -> str:
    """`scheme://host[:port]` in lower case; ValueError naming what is wrong with anything else."""
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"CORS origin {text!r} must be http(s)://host[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"CORS origin {text!r} is an origin only: no path, query, fragment or user")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"CORS origin {text!r} has a bad port") from None
    host = parts.netloc.lower().rsplit(":", 1)[0] if port is not None else parts.netloc.lower()  # [::1] kept
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" if port in (None, default) else f"{parts.scheme}://{host}:{port}"


@dataclass(frozen=True, slots=True)
class CorsPolicy:
    origins: frozenset[str]

    @classmethod
    def of(cls, origins: Iterable[str]) -> CorsPolicy:
        return cls(frozenset(normalized_origin(o) for o in origins))

    def __bool__(self) -> bool:
        return bool(self.origins)

    def allows(self, origin: str) -> bool:
        return origin.lower().rstrip("/") in self.origins

    def hosts(self) -> frozenset[str]:
        """The `host[:port]` part of each origin, as the DNS-rebinding check matches Origin headers."""
        return frozenset(o.partition("://")[2] for o in self.origins)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _allowed_request_headers(requested: str | None) -> bytes:
    names = [h.strip().lower() for h in (requested or "").split(",")[:MAX_REQUESTED_HEADERS] if h.strip()]
    kept = [h for h in names if h in ALLOWED_HEADERS or h.startswith(PARAM_HEADER_PREFIX)]
    return ", ".join(kept).encode("latin-1")


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def with_cors(policy: CorsPolicy, scope: Scope, receive: Receive, send: Send, app: AsgiCall) -> None:
    """Answer a preflight, or run `app` with CORS headers added to its response for a listed origin."""
    origin = _header(scope, b"origin")
    allowed = origin is not None and policy.allows(origin)
    if scope.get("method") == "OPTIONS" and _header(scope, b"access-control-request-method") is not None:
        if not allowed or origin is None:
            body = b'{"error":"Origin not allowed"}'
            await _answer(send, 403, [(b"content-type", b"application/json")], body)
            return
        requested = _header(scope, b"access-control-request-headers")
        headers = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"vary", b"Origin"),
            (b"access-control-allow-methods", ALLOWED_METHODS),
            (b"access-control-allow-headers", _allowed_request_headers(requested)),
            (b"access-control-max-age", MAX_AGE_SECONDS),
        ]
        await _answer(send, 204, headers)
        return
    if not allowed or origin is None:
        await app(scope, receive, send)
        return
    added = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"vary", b"Origin"),
        (b"access-control-expose-headers", EXPOSED_HEADERS),
    ]

    async def send_with_cors(message: AsgiMessage) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *added]}
        await send(message)

    await app(scope, receive, send_with_cors)
