"""The gateway's HTTP surface: one MCP endpoint per exposition at /mcp/{name}."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import orjson

from apimcp.backends.rest import RestBackend
from apimcp.gateway.exposition import ExposedOperation, ExpositionHandler, ExpositionSettings
from apimcp.gateway.plan import GatewayPlan, PlannedService
from apimcp.protocol import CacheHint, EndpointOptions, McpEndpoint, RequestStateSealer, TransportSecurity
from apimcp.protocol.exchange import Receive, Scope, Send, run_lifespan

MCP_PREFIX = "/mcp/"


class GatewayApp:
    """ASGI application routing /mcp/{name} to the exposition of that name."""

    def __init__(self, endpoints: Mapping[str, McpEndpoint]) -> None:
        self.endpoints = dict(endpoints)

    def shutdown(self) -> None:
        for endpoint in self.endpoints.values():
            endpoint.shutdown()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await run_lifespan(receive, send, self.shutdown)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path.startswith(MCP_PREFIX):
            endpoint = self.endpoints.get(path[len(MCP_PREFIX) :].rstrip("/"))
            if endpoint is not None:
                await endpoint.handle(scope, receive, send)
                return
            await _json(send, 404, {"error": f"No exposition at {path}", "expositions": self.index()})
        elif path in ("/", "/healthz"):
            await _json(send, 200, {"status": "ok", "expositions": self.index()})
        else:
            await _json(send, 404, {"error": f"Nothing at {path}", "expositions": self.index()})

    def index(self) -> dict[str, str]:
        return {name: MCP_PREFIX + name for name in self.endpoints}


async def _json(send: Send, status: int, body: object) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def endpoint_options(plan: GatewayPlan) -> EndpointOptions:
    server = plan.config.server
    keys = [ref.value().encode() for ref in server.request_state_keys]
    return EndpointOptions(
        security=TransportSecurity.for_hosts(server.allowed_hosts),
        request_state=RequestStateSealer(keys) if keys else RequestStateSealer(),
    )


def build_app(plan: GatewayPlan, session: aiohttp.ClientSession, options: EndpointOptions | None = None) -> GatewayApp:
    """The gateway for `plan`, calling backends through `session` (created in the serving loop)."""
    options = options or endpoint_options(plan)
    backends = {key: _backend(planned, session) for key, planned in plan.services.items()}
    endpoints = {}
    for exposition in plan.expositions:
        config = exposition.config
        settings = ExpositionSettings(
            name=exposition.name,
            title=config.title,
            instructions=config.instructions,
            cache_hints={m: CacheHint(ttl_ms=h.ttl_ms, scope=h.scope) for m, h in config.cache.items()},
            output_schemas=config.output_schemas,
        )
        operations = [
            ExposedOperation(operation, backends[member.key])
            for member in exposition.services
            for operation in member.operations
        ]
        endpoints[exposition.name] = McpEndpoint(
            ExpositionHandler(settings, operations), options, endpoint_id=exposition.name
        )
    return GatewayApp(endpoints)


def _backend(planned: PlannedService, session: aiohttp.ClientSession) -> RestBackend:
    config = planned.config
    return RestBackend(
        planned.service,
        session,
        base_url=config.backend,
        credentials=planned.credentials,
        timeout_seconds=config.timeout,
        max_response_bytes=config.max_response_bytes,
    )
