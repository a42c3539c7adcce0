"""The headers every console response carries: a strict Content-Security-Policy and its companions.

Scripts come only from the console's own files (no inline script, no eval), nothing may frame the console, and
the page may connect to its own origin (the REST API, and the gateway of `apimcp serve`) plus the gateway origins
an operator names, for the try-it panel's calls to a gateway elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def gateway_origin(url: str) -> str:
    """`scheme://host[:port]` of a gateway URL; ValueError for anything that is not an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise ValueError(f"console gateway {url!r} must be an http(s) URL")
    if any(c in parts.netloc for c in " ;,'\""):
        raise ValueError(f"console gateway {url!r} has characters a Content-Security-Policy cannot carry")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def content_security_policy(gateway_origins: Iterable[str] = ()) -> str:
    connect = " ".join(["'self'", *sorted({gateway_origin(o) for o in gateway_origins})])
    return "; ".join(
        [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",  # images a tool returns are shown as data: URLs
            f"connect-src {connect}",
            "base-uri 'none'",
            "form-action 'none'",  # every form is sent by the scripts, never by the browser
            "frame-ancestors 'none'",
        ]
    )


def security_headers(gateway_origins: Iterable[str] = ()) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(gateway_origins),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "Cache-Control": "no-cache",
        "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    }


class ConsoleHeaders:
    """ASGI middleware: the console's headers on every answer under `/console`, those the framework or the request
    limits make too (a 405, a 431), where the console's routes did not set them."""

    def __init__(self, app: ASGIApp, headers: Mapping[str, str]) -> None:
        self._app = app
        self._headers = [(name.lower().encode(), value.encode()) for name, value in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path != "/console" and not path.startswith("/console/"):
            await self._app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in self._headers if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self._app(scope, receive, sending)
