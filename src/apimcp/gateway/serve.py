"""Running a gateway: one aiohttp session for the backends, uvicorn for the clients."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from apimcp.backends.rest import close_session, new_session
from apimcp.gateway.app import GatewayApp, build_app
from apimcp.gateway.plan import GatewayPlan
from apimcp.serving import server_for


async def serve_gateway(
    plan: GatewayPlan,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    on_ready: Callable[[GatewayApp], Awaitable[None] | None] | None = None,
) -> None:
    """Serve `plan` until interrupted (the backend session lives in the serving loop)."""
    session = new_session()
    try:
        app = build_app(plan, session)
        if on_ready is not None:
            outcome = on_ready(app)
            if outcome is not None:
                await outcome
        await server_for(app, app.shutdown, host=host, port=port, log_level=log_level).serve()
    finally:
        await close_session(session)
