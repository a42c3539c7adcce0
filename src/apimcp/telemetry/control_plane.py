"""The control plane's requests in metrics: by method, route template (`/api/v1/services/{service_id}`, never
the path a client typed) and status; and `/metrics` on a control plane run alone."""

from __future__ import annotations

import time
from typing import Any

from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.telemetry.active import Telemetry
from apimcp.telemetry.labels import http_method_label
from apimcp.telemetry.scrape import METRICS_PATH, serve_metrics

UNMATCHED = "unmatched"


def route_template(scope: Scope) -> str:
    """The template of the route that answered, with the prefix of the router it was included under (the route
    knows only its own part: `/services/{service_id}` under `/api/v1`); `unmatched` when none did."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    pattern = getattr(route, "path_regex", None)
    if not isinstance(template, str):
        return UNMATCHED
    path = str(scope.get("path", ""))
    if pattern is not None:
        for cut in range(len(path)):
            if path[cut] == "/" and pattern.match(path[cut:]):
                return path[:cut] + template
    return template


class ControlPlaneMetrics:
    """ASGI middleware around the control plane's application."""

    def __init__(self, app: Any, telemetry: Telemetry) -> None:
        self.app = app
        self._telemetry = telemetry
        assert telemetry.metrics is not None
        self._metrics = telemetry.metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == METRICS_PATH:
            await serve_metrics(self._telemetry, scope, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            label = route_template(scope)
            method = http_method_label(str(scope.get("method", "")))
            metrics = self._metrics
            metrics.control_requests.labels(method, label, str(status[0])).inc()
            metrics.control_duration.labels(method, label).observe(time.perf_counter() - started)
