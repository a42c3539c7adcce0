"""The headers every console response carries: a strict Content-Security-Policy and its companions.

Scripts come only from the console's own files (no inline script, no eval), nothing may frame the console, and
the page may connect to its own origin (the REST API, and the gateway of `apimcp serve`) plus the gateway origins
an operator names, for the try-it panel's calls to a gateway elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit


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
