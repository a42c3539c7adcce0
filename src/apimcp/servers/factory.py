"""Every apimcp server, built the same way: uvicorn with bounded request heads, forwarded headers believed only
from the proxies named, optional TLS and a graceful stop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import uvicorn

from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.servers.forwarded_headers import ForwardedHeaders, proxy_settings
from apimcp.servers.head_limits import HeadLimits, uvicorn_settings
from apimcp.servers.lifecycle import OnListening, StreamClosingServer
from apimcp.servers.tls import ServerTls

AsgiApp = Callable[[Scope, Receive, Send], object]


def server_for(
    app: AsgiApp,
    on_shutdown: Callable[[], None],
    *,
    host: str,
    port: int,
    log_level: str = "warning",
    tls: ServerTls | None = None,
    head_limits: HeadLimits | None = None,
    forwarded: ForwardedHeaders | None = None,
    on_listening: OnListening | None = None,
) -> StreamClosingServer:
    """A server of `app` on host:port; `on_shutdown` ends its long-lived streams, `on_listening` says where it
    answers once it accepts connections; `forwarded` names the proxies whose X-Forwarded-For and -Proto it
    believes (by default none)."""
    tls_settings: dict[str, Any] = {}
    if tls is not None:
        tls.check()
        tls_settings = {"ssl_certfile": str(tls.certificate), "ssl_keyfile": str(tls.key)}
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        **uvicorn_settings(head_limits or HeadLimits()),
        **proxy_settings(forwarded or ForwardedHeaders()),
        **tls_settings,
    )
    return StreamClosingServer(config, on_shutdown, on_listening=on_listening)
