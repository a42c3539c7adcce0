"""The gateway's HTTP surface: MCP endpoints by exposition id, by name, or by service coordinates.

- `/mcp/{expositionId}`
- `/mcp/{organization}/{expositionName}` (canonical when the exposition has a name)
- `/mcp/{organization}/{service}/{version}`: the most recent exposition of that service; the
  response names the canonical endpoint in `Link: <...>; rel="canonical"`.
- `/mcp/{name}` also finds an exposition named so in the default organization.

Each route's guard (`apimcp.auth.guard`) admits a request first: a plan's API key (`Authorization: Bearer
<key>`, `X-API-Key` or `x-reshapr-key`), or an OAuth access token; a refusal is 401 or 403 with its
`WWW-Authenticate` challenge; an access token must be issued for one of the URLs that lead to the exposition now
(`apimcp.gateway.routing`), on this server's origin. Then the plan's rate limits (`apimcp.ratelimit`): 429 with
Retry-After beyond (the calls scripts make into the exposition spend from the same buckets: `apimcp.gateway.calls`;
so do the further messages of a JSON-RPC batch: `apimcp.gateway.batch_rates`).
A refusal of either is the request's only audit event: the endpoint never hears of the request.
`/.well-known/oauth-protected-resource/mcp/...` is the RFC 9728 metadata of every endpoint form of an
OAuth-protected exposition. `/metrics`: Prometheus metrics, when on (`apimcp.telemetry`). `/elicitation/...`
are the pages where users supply their own backend credentials (`apimcp.elicitation.pages`). `.../sse` and
`.../messages` after an endpoint's path serve the 2024-11-05 HTTP+SSE transport (`apimcp.protocol.http_sse`).
Browser pages of the origins an operator lists reach the MCP endpoints and their metadata through CORS
(`apimcp.protocol.cors`): a preflight is answered before the guard.
"""

from __future__ import annotations

import functools

import orjson

from apimcp.auth.guard import Refusal
from apimcp.auth.resource import WELL_KNOWN, ExpositionResource
from apimcp.elicitation.broker import PAGES
from apimcp.elicitation.pages import ElicitationPages
from apimcp.gateway.batch_rates import BatchRates
from apimcp.gateway.routing import MCP_PREFIX
from apimcp.gateway.runtime import GatewayRuntime, Route
from apimcp.protocol.batch_allowance import BATCH_ALLOWANCE_KEY
from apimcp.protocol.caller import CALLER_KEY, Caller, caller_key
from apimcp.protocol.cors import with_cors
from apimcp.protocol.errors import SERVER_BUSY
from apimcp.protocol.exchange import Receive, Scope, Send, run_lifespan
from apimcp.ratelimit.limiter import RateLimiter, Refused
from apimcp.telemetry.scrape import METRICS_PATH, serve_metrics

METADATA_PREFIX = WELL_KNOWN + MCP_PREFIX[:-1]


class GatewayApp:
    """ASGI application routing MCP requests to the current expositions."""

    def __init__(self, runtime: GatewayRuntime) -> None:
        self.runtime = runtime
        self._pages = ElicitationPages(runtime.elicitation)
        self._cors = runtime.cors

    def endpoints(self) -> dict[str, str]:
        """Each exposition served now, by name (or id), with its canonical path."""
        return {route.name or route.exposition_id: route.canonical_path for route in self.runtime.routes.by_id.values()}

    def shutdown(self) -> None:
        self.runtime.shutdown()

    async def _metadata(self, scope: Scope, send: Send, mcp_path: str) -> None:
        """The protected resource metadata of the exposition at `mcp_path` (404 unless it takes OAuth tokens)."""
        route, _ = self.runtime.routes.resolve(mcp_path)
        if route is None or route.resource is None:
            await json_response(send, 404, {"error": f"No OAuth-protected exposition at {mcp_path}"})
            return
        misdirected = route.resource.misdirected(scope)
        if misdirected is not None:
            await json_response(send, 421, {"error": misdirected})
            return
        resource = route.resource.at(scope["scheme"], scope["headers"], mcp_path)
        await json_response(send, 200, resource.metadata(), [(b"cache-control", b"max-age=300")])

    def _misdirected(self, scope: Scope, resource: ExpositionResource) -> str | None:
        """Why the request's Host cannot be the origin its token's audience is checked against, or None."""
        if not self.runtime.host_allowed(scope):
            return "Host not allowed (DNS rebinding protection)"
        return resource.misdirected(scope)

    async def _within_limits(
        self, route: Route, limiter: RateLimiter, scope: Scope, caller: Caller | None, send: Send
    ) -> BatchRates | None:
        """Whether the request is within the route's rate limits: if so, what charges the further messages of a
        batch it may carry; else None, and it is answered 429."""
        client = scope.get("client")
        key = caller_key(caller.principal if caller else None, str(client[0]) if client else None)
        exposition = route.name or route.exposition_id
        limited = await limiter.check(key)
        if limited is not None:
            self.runtime.rate_limited(route, scope, caller, limited)
            await _rate_limited(send, limited, exposition)
            return None
        return BatchRates(limiter, key, exposition, functools.partial(self.runtime.rate_limited, route, scope, caller))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, self.shutdown)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        cors = self._cors
        # /healthz too: counts only, and the console's gateway screen reads it from its own origin.
        if cors and (path.startswith(MCP_PREFIX) or path.startswith(METADATA_PREFIX + "/") or path == "/healthz"):
            await with_cors(cors, scope, receive, send, self._serve)
            return
        await self._serve(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if path.startswith(MCP_PREFIX):
            routes = self.runtime.routes  # one table for the route and the paths that lead to it
            route, by_service = routes.resolve(path)
            http_sse = False
            if route is None and path.endswith(("/sse", "/messages")):  # the 2024-11-05 HTTP+SSE transport
                route, by_service = routes.resolve(path.rsplit("/", 1)[0])
                http_sse = route is not None
            if route is None:
                await json_response(send, 404, {"error": f"No exposition at {path}"})
                return
            resource = None
            if route.resource is not None:
                misdirected = self._misdirected(scope, route.resource)
                if misdirected is not None:  # checked before the token: the token's audience is built on this Host
                    await json_response(send, 421, {"error": misdirected})
                    return
                endpoint_path = path.rsplit("/", 1)[0] if http_sse else path  # the endpoint's metadata, not .../sse
                served = routes.served.get(route.exposition_id, ())
                resource = route.resource.at(scope["scheme"], scope["headers"], endpoint_path, served)
            try:
                caller = await route.guard.admit(scope, resource)
            except Refusal as refusal:
                self.runtime.refused(route, scope, refusal)
                told = [(b"www-authenticate", refusal.challenge)] if refusal.challenge else [(b"retry-after", b"5")]
                await json_response(send, refusal.status, {"error": refusal.message}, told)
                return
            admitted: dict[str, object] = {CALLER_KEY: caller} if caller is not None else {}
            if route.limiter is not None:
                batches = await self._within_limits(route, route.limiter, scope, caller, send)
                if batches is None:
                    return
                admitted[BATCH_ALLOWANCE_KEY] = batches
            if admitted:
                scope = {**scope, **admitted}
            if by_service:
                send = _with_header(send, b"link", f'<{route.canonical_path}>; rel="canonical"'.encode())
            await route.endpoint.handle(scope, receive, send, legacy_sse=http_sse)
        elif path.startswith(METADATA_PREFIX + "/") and scope["method"] in ("GET", "HEAD"):
            if not self.runtime.host_allowed(scope):
                await json_response(send, 421, {"error": "Host not allowed (DNS rebinding protection)"})
                return
            await self._metadata(scope, send, path[len(WELL_KNOWN) :])
        elif path.startswith(PAGES + "/"):
            if not self.runtime.host_allowed(scope):
                await json_response(send, 421, {"error": "Host not allowed (DNS rebinding protection)"})
                return
            await self._pages(scope, receive, send)
        elif path == METRICS_PATH:
            await serve_metrics(self.runtime.telemetry, scope, send)
        elif path in ("/healthz", "/"):
            # Counts only: a gateway serves several organizations, and none may learn the others' names.
            routes = self.runtime.routes
            health = {"status": "ok", "revision": routes.revision, "expositions": len(routes.by_id)}
            upstreams = self.runtime.upstream_states()
            if upstreams:  # the MCP servers fronted, counted by state (unknown: not called yet)
                health["upstreams"] = upstreams
            await json_response(send, 200, health)
        else:
            await json_response(send, 404, {"error": f"Nothing at {path}"})


async def _rate_limited(send: Send, refused: Refused, exposition: str) -> None:
    """429 with Retry-After, and a JSON-RPC error an MCP client can show, saying whose limit it reached (as a
    script's refused call does: `apimcp.gateway.calls`)."""
    error = {"code": SERVER_BUSY, "message": refused.message(exposition), "data": refused.data}
    await json_response(send, 429, {"jsonrpc": "2.0", "id": None, "error": error},
                        [(b"retry-after", str(refused.retry_after).encode())])  # fmt: skip


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
