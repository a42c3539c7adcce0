"""`apimcp demo`: the bundled Bookshelf REST API, started on loopback and exposed through the gateway.

Everything a newcomer sees is the real path: an OpenAPI description imported,
a backend called over HTTP, tools served to MCP clients of every revision.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from apimcp.demo_api import spec_path, start
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.config import CacheHintConfig, ExpositionConfig, GatewayConfig, ServerConfig, ServiceConfig
from apimcp.gateway.plan import GatewayPlan, plan_gateway
from apimcp.gateway.serve import serve_gateway

INSTRUCTIONS = (
    "A bookshelf: list, search, add and update books, upload and read covers, read and write reviews, look up authors."
)


def demo_plan(backend_url: str, host: str = "127.0.0.1", port: int = 8765) -> GatewayPlan:
    """The gateway plan exposing the Bookshelf API running at `backend_url`."""
    config = GatewayConfig(
        services={"bookshelf": ServiceConfig(openapi=str(spec_path()), backend=backend_url)},
        expositions={
            "bookshelf": ExpositionConfig(
                services=("bookshelf",),
                title="Bookshelf (apimcp demo)",
                instructions=INSTRUCTIONS,
                cache={"tools/list": CacheHintConfig(ttl_ms=60_000, scope="public")},
            )
        },
        server=ServerConfig(host=host, port=port),
    )
    return plan_gateway(config)


async def run_demo(
    host: str, port: int, on_ready: Callable[[GatewayApp, str], Awaitable[None] | None] | None = None
) -> None:
    """Start the demo API on a free loopback port, then serve it as MCP until interrupted."""
    runner, api_port = await start("127.0.0.1", 0)
    backend_url = f"http://127.0.0.1:{api_port}"
    try:

        def ready(app: GatewayApp) -> Awaitable[None] | None:
            return on_ready(app, backend_url) if on_ready is not None else None

        await serve_gateway(demo_plan(backend_url, host, port), host=host, port=port, on_ready=ready)
    finally:
        await runner.cleanup()
