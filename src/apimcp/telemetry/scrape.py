"""`GET /metrics`: the registry in the Prometheus text format, behind `APIMCP_METRICS_TOKEN` when it is set.

Labels name expositions (`organization/name`), so a gateway serving several organizations should require the
token, or be reachable on this port only from the scraper.
"""

from __future__ import annotations

import hmac

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from apimcp.protocol.exchange import Scope, Send
from apimcp.telemetry.active import Telemetry

METRICS_PATH = "/metrics"


async def serve_metrics(telemetry: Telemetry, scope: Scope, send: Send) -> None:
    """Answer a request for `/metrics` (404 when metrics are off)."""
    metrics = telemetry.metrics
    if metrics is None:
        await _plain(send, 404, b"metrics are off (APIMCP_METRICS=on turns them on)\n")
        return
    if scope.get("method") not in ("GET", "HEAD"):
        await _plain(send, 405, b"GET /metrics\n", [(b"allow", b"GET, HEAD")])
        return
    token = telemetry.metrics_token
    if token is not None and not _authorized(scope, token):
        await _plain(send, 401, b"a bearer token is required\n", [(b"www-authenticate", b'Bearer realm="metrics"')])
        return
    body = generate_latest(metrics.registry)
    headers = [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})


def _authorized(scope: Scope, token: str) -> bool:
    expected = b"bearer " + token.encode()
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and len(value) == len(expected):
            given = value[:7].lower() + value[7:]
            if hmac.compare_digest(given, expected):
                return True
    return False


async def _plain(send: Send, status: int, text: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    head = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*head, *(headers or [])]})
    await send({"type": "http.response.body", "body": text})
