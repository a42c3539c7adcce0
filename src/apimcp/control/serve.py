"""`apimcp control-plane`: the REST API alone, for gateways that run elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from apimcp.control.api.app import create_api
from apimcp.control.limits import UpstreamRefresh
from apimcp.control.plane import ControlPlane
from apimcp.control.upstream_refresh import keep_refreshing
from apimcp.servers.factory import server_for
from apimcp.servers.forwarded_headers import ForwardedHeaders
from apimcp.servers.head_limits import HeadLimits
from apimcp.servers.lifecycle import OnListening
from apimcp.servers.tls import ServerTls


async def serve_control_plane(
    plane: ControlPlane,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    tls: ServerTls | None = None,
    head_limits: HeadLimits | None = None,
    forwarded: ForwardedHeaders | None = None,
    console_gateways: Sequence[str] = (),
    on_listening: OnListening | None = None,
    refresh: UpstreamRefresh | None = None,
) -> None:
    """Serve `plane` until stopped; `console_gateways` are the gateway origins the web console may call;
    `on_listening` once it accepts connections; `refresh`: how often MCP servers are read again."""
    refreshing = asyncio.get_running_loop().create_task(keep_refreshing(plane, refresh or UpstreamRefresh()))
    try:
        # Stopping ends the gateways' long polls at once; they retry until the control plane is back.
        app = create_api(plane, console_gateways=console_gateways)
        server = server_for(
            app,
            plane.signal.close,
            host=host,
            port=port,
            log_level=log_level,
            tls=tls,
            head_limits=head_limits,
            forwarded=forwarded,
            on_listening=on_listening,
        )
        await server.serve()
    finally:
        refreshing.cancel()
        plane.imports.shutdown()
        plane.store.dispose()
