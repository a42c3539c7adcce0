"""`apimcp control-plane`: the REST API alone, for gateways that run elsewhere."""

from __future__ import annotations

from apimcp.control.api.app import create_api
from apimcp.control.plane import ControlPlane
from apimcp.serving import ServerTls, server_for


async def serve_control_plane(
    plane: ControlPlane, *, host: str, port: int, log_level: str = "info", tls: ServerTls | None = None
) -> None:
    try:
        # Stopping ends the gateways' long polls at once; they retry until the control plane is back.
        server = server_for(create_api(plane), plane.signal.close, host=host, port=port, log_level=log_level, tls=tls)
        await server.serve()
    finally:
        plane.imports.shutdown()
        plane.store.dispose()
