"""The gateway's HTTP surface: MCP endpoints by exposition id, by name, or by service coordinates.

- `/mcp/{expositionId}`
- `/mcp/{organization}/{expositionName}` (canonical when the exposition has a name)
- `/mcp/{organization}/{service}/{version}`: the most recent exposition of that service; the
  response names the canonical endpoint in `Link: <...>; rel="canonical"`.
- `/mcp/{name}` also finds an exposition named so in the default organization.

Plans with inbound API-key security require `Authorization: Bearer <key>` or `X-API-Key: <key>`.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import unquote

import orjson

from apimcp.gateway.runtime import GatewayRuntime, Route, Routes
from apimcp.protocol.exchange import Receive, Scope, Send, run_lifespan

MCP_PREFIX = "/mcp/"
DEFAULT_ORGANIZATION = "default"


def resolve(routes: Routes, path: str) -> tuple[Route | None, bool]:
    """The route a path names, and whether it is a service-coordinates path (non-canonical)."""
    parts = [unquote(p) for p in path[len(MCP_PREFIX) :].strip("/").split("/")]
    if len(parts) == 1:
        return routes.by_id.get(parts[0]) or routes.by_name.get((DEFAULT_ORGANIZATION, parts[0])), False
    if len(parts) == 2:
        return routes.by_name.get((parts[0], parts[1])), False
    if len(parts) == 3:
        return routes.by_service.get((parts[0], parts[1].replace("+", " "), parts[2])), True
    return None, False


class GatewayApp:
    """ASGI application routing MCP requests to the current expositions."""

    def __init__(self, runtime: GatewayRuntime) -> None:
        self.runtime = runtime

    def endpoints(self) -> dict[str, str]:
        """Each exposition served now, by name (or id), with its canonical path."""
        return {route.name or route.exposition_id: route.canonical_path for route in self.runtime.routes.by_id.values()}

    def shutdown(self) -> None:
        self.runtime.shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, self.shutdown)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path.startswith(MCP_PREFIX):
            route, by_service = resolve(self.runtime.routes, path)
            if route is None:
                await json_response(send, 404, {"error": f"No exposition at {path}"})
                return
            if route.api_key_hash is not None and not _key_ok(scope, route.api_key_hash):
                await json_response(
                    send,
                    401,
                    {"error": "This endpoint needs an API key: Authorization: Bearer <key> or X-API-Key: <key>"},
                    [(b"www-authenticate", b'Bearer realm="apimcp"')],
                )
                return
            if by_service:
                send = _with_header(send, b"link", f'<{route.canonical_path}>; rel="canonical"'.encode())
            await route.endpoint.handle(scope, receive, send)
        elif path in ("/healthz", "/"):
            # Counts only: a gateway serves several organizations, and none may learn the others' names.
            routes = self.runtime.routes
            await json_response(
                send, 200, {"status": "ok", "revision": routes.revision, "expositions": len(routes.by_id)}
            )
        else:
            await json_response(send, 404, {"error": f"Nothing at {path}"})


def _key_ok(scope: Scope, expected_hash: str) -> bool:
    for name, value in scope["headers"]:
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            candidate = value[7:].strip()
        elif name == b"x-api-key":
            candidate = value.strip()
        else:
            continue
        if hmac.compare_digest(hashlib.sha256(candidate).hexdigest(), expected_hash):
            return True
    return False


def _with_header(send: Send, name: bytes, value: bytes) -> Send:
    async def sending(message: dict) -> None:  # type: ignore[type-arg]
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (name, value)]}
        await send(message)

    return sending  # type: ignore[return-value]


async def json_response(
    send: Send, status: int, body: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
