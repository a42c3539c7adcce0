"""Running a gateway: from a configuration file, or following a control plane.

Either way one aiohttp session (created in the serving loop) calls the backends
and uvicorn serves the clients.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from apimcp.artifacts.filter_runner import FilterLimits
from apimcp.artifacts.scripting import ScriptLimits
from apimcp.backends.rest import close_session, new_session
from apimcp.codemode.limits import CodeModeLimits
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.declared import build_gateway
from apimcp.gateway.failover import FailoverSource
from apimcp.gateway.plan import GatewayPlan
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.gateway.sync import GatewaySync, HttpSource, following
from apimcp.protocol import EndpointOptions
from apimcp.protocol.cors import normalized_origin
from apimcp.safety.addresses import AddressPolicy
from apimcp.sealing.keys import GatewayKey
from apimcp.servers.factory import server_for
from apimcp.servers.forwarded_headers import ForwardedHeaders
from apimcp.servers.head_limits import HeadLimits
from apimcp.servers.tls import ServerTls
from apimcp.shaping.limits import ShapingLimits
from apimcp.state import GatewayState

log = logging.getLogger("apimcp.gateway")
FIRST_SNAPSHOT_SECONDS = 30.0
OnReady = Callable[[GatewayApp], Awaitable[None] | None]
"""Called once the gateway accepts connections (to print where it answers)."""


async def _first_snapshot(sync: GatewaySync) -> None:
    """Wait to listen until there is something to serve: a gateway that restarts behind a load balancer would
    otherwise answer 404 until its first snapshot, where a closed port sends clients elsewhere. A gateway the
    control plane refuses listens at once (its /healthz shows it up, with nothing to serve)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FIRST_SNAPSHOT_SECONDS
    while not sync.first_applied.is_set() and sync.refusal is None:
        if loop.time() >= deadline:
            log.warning(
                "no snapshot from the control plane after %.0f s; listening anyway (404 until one arrives)",
                FIRST_SNAPSHOT_SECONDS,
            )
            return
        await asyncio.sleep(0.05)


async def _listen(
    app: GatewayApp,
    on_ready: OnReady | None,
    *,
    host: str,
    port: int,
    log_level: str,
    tls: ServerTls | None,
    head_limits: HeadLimits | None,
    forwarded: ForwardedHeaders | None,
) -> None:
    """Serve `app` until stopped; `on_ready` once it accepts connections."""
    on_listening = (lambda: on_ready(app)) if on_ready is not None else None
    server = server_for(
        app, app.shutdown, host=host, port=port, log_level=log_level, tls=tls, head_limits=head_limits,
        forwarded=forwarded, on_listening=on_listening,
    )  # fmt: skip
    await server.serve()


async def serve_gateway(
    plan: GatewayPlan,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    on_ready: OnReady | None = None,
    tls: ServerTls | None = None,
    head_limits: HeadLimits | None = None,
    forwarded: ForwardedHeaders | None = None,
    options: EndpointOptions | None = None,
    script_limits: ScriptLimits | None = None,
    code_limits: CodeModeLimits | None = None,
    state: GatewayState | None = None,
    filter_limits: FilterLimits | None = None,
    shaping_limits: ShapingLimits | None = None,
) -> None:
    """Serve a configuration's plan until interrupted (`options` default to its `server` section's)."""
    session = new_session()
    try:
        app = build_gateway(plan, session, options, script_limits, state, filter_limits, shaping_limits, code_limits)
        try:
            await _listen(
                app, on_ready, host=host, port=port, log_level=log_level, tls=tls, head_limits=head_limits,
                forwarded=forwarded,
            )  # fmt: skip
        finally:
            await app.runtime.close()
    finally:
        await close_session(session)


def console_origins(control_planes: Sequence[str]) -> list[str]:
    """The origins of the control planes' URLs: the web console each serves (at /console/) calls the gateway from
    the browser (its try-it panel), so a gateway following them allows these origins besides its listed ones."""
    origins: list[str] = []
    for url in control_planes:
        parts = urlsplit(url)
        origins.append(normalized_origin(f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"))
    return origins


async def serve_connected_gateway(
    control_planes: Sequence[str],
    token: str,
    key: GatewayKey,
    *,
    name: str,
    labels: Mapping[str, str],
    options: EndpointOptions,
    host: str,
    port: int,
    log_level: str = "info",
    on_ready: OnReady | None = None,
    allow_http: bool = False,
    control_plane_tls: ssl.SSLContext | None = None,
    tls: ServerTls | None = None,
    fetch_policy: AddressPolicy | None = None,
    head_limits: HeadLimits | None = None,
    forwarded: ForwardedHeaders | None = None,
    script_limits: ScriptLimits | None = None,
    code_limits: CodeModeLimits | None = None,
    public_url: str | None = None,
    state: GatewayState | None = None,
    filter_limits: FilterLimits | None = None,
    shaping_limits: ShapingLimits | None = None,
) -> None:
    """Serve what a control plane publishes for this gateway, following its changes, until interrupted.

    Listening starts once the first snapshot is applied; if the control plane cannot be reached within
    FIRST_SNAPSHOT_SECONDS, the gateway listens anyway, keeps trying, and answers 404 until it has something
    to serve.
    Snapshots are sealed to `key`, whose public half must be registered with the control plane. With several
    control-plane URLs (replicas on one database), the gateway follows the first that answers.
    Browser pages of the control planes' origins (their console) may call it, besides the origins `options` list.
    """
    options = replace(options, security=options.security.with_cors_origins(console_origins(control_planes)))
    session = new_session()
    runtime = GatewayRuntime(
        session,
        options,
        key=key,
        fetch_policy=fetch_policy,
        script_limits=script_limits,
        code_limits=code_limits,
        filter_limits=filter_limits,
        shaping_limits=shaping_limits,
        public_url=public_url,
        state=state,
    )
    try:
        source = FailoverSource(
            [
                (
                    url,
                    HttpSource(
                        session, url, token, name, key.public, labels, allow_http=allow_http, tls=control_plane_tls
                    ),
                )
                for url in control_planes
            ]
        )
        async with following(runtime, source) as sync:
            await _first_snapshot(sync)
            app = GatewayApp(runtime)
            await _listen(
                app, on_ready, host=host, port=port, log_level=log_level, tls=tls, head_limits=head_limits,
                forwarded=forwarded,
            )  # fmt: skip
    finally:
        await close_session(session)
