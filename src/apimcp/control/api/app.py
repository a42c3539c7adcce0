"""The control plane's HTTP application: /api/v1, errors as RFC 9457 problem details."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException

from apimcp import __version__
from apimcp.console.headers import ConsoleHeaders, security_headers
from apimcp.console.routes import console_router
from apimcp.control.api import (
    access_routes,
    approval_routes,
    audit_routes,
    catalog_routes,
    discovery_routes,
    export_routes,
    exposure_routes,
    history_routes,
    key_routes,
    people_routes,
    quota_routes,
    sso_routes,
    sync_routes,
    template_routes,
    traffic_routes,
)
from apimcp.control.api.api_docs import api_docs_router
from apimcp.control.api.no_store import NoStore
from apimcp.control.api.request_limits import RequestLimits
from apimcp.control.errors import DomainError
from apimcp.control.plane import ControlPlane
from apimcp.telemetry import Telemetry, installed
from apimcp.telemetry.control_plane import ControlPlaneMetrics

log = logging.getLogger("apimcp.control")
PROBLEM = "application/problem+json"
UPLOADS = re.compile(r"/api/v1/services(/[^/]+/artifacts)?")
"""Where descriptions and artifacts are uploaded (multipart): the routes with the larger body limit."""


def problem(status: int, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM)


def is_upload(method: str, path: str) -> bool:
    return method == "POST" and UPLOADS.fullmatch(path) is not None


def create_api(
    plane: ControlPlane, telemetry: Telemetry | None = None, console_gateways: Iterable[str] = ()
) -> FastAPI:
    """The REST API of `plane`, behind the request limits of `plane.limits`; its requests counted when
    `telemetry` (default: the process's) has metrics on. The web console at /console/ (`console_gateways`:
    gateway origins besides this one that its try-it panel may call)."""
    app = FastAPI(
        title="apimcp control plane",
        version=__version__,
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # `api_docs`: pinned, integrity-checked and under a CSP
        redoc_url=None,
    )
    app.state.plane = plane
    app.add_middleware(RequestLimits, limits=plane.limits, is_upload=is_upload)
    app.add_middleware(NoStore)  # outside the limits: their refusals are API answers too
    app.add_middleware(ConsoleHeaders, headers=security_headers(console_gateways))  # the limits' refusals too
    telemetry = installed() if telemetry is None else telemetry
    if telemetry.metrics is not None:  # outermost: it counts what the limits refuse too
        app.add_middleware(ControlPlaneMetrics, telemetry=telemetry)
    for module in (
        catalog_routes,
        exposure_routes,
        discovery_routes,
        export_routes,
        access_routes,
        key_routes,
        people_routes,
        quota_routes,
        template_routes,
        sync_routes,
        audit_routes,
        history_routes,
        traffic_routes,
        approval_routes,
        sso_routes,
    ):
        app.include_router(module.router, prefix="/api/v1")
    app.include_router(console_router(console_gateways))
    app.include_router(api_docs_router())

    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> JSONResponse:
        extra = {"field": exc.field} if exc.field else {}
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        response = problem(exc.status, exc.title, exc.detail, **extra)
        if headers:
            response.headers.update(headers)
        return response

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        """Routing refusals (unknown path, wrong method) as problem details too."""
        response = problem(exc.status_code, HTTPStatus(exc.status_code).phrase, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "field": ".".join(str(p) for p in error["loc"] if p not in ("body", "query", "path")),
                "message": error["msg"],
            }
            for error in exc.errors()
        ]
        first = errors[0] if errors else {"field": "", "message": "invalid request"}
        detail = f"{first['field']}: {first['message']}" if first["field"] else first["message"]
        return problem(422, "Invalid value", detail, field=first["field"] or None, errors=errors)

    @app.exception_handler(DataError)
    async def refused_by_the_database(request: Request, exc: DataError) -> JSONResponse:
        """A value the database will not keep (PostgreSQL refuses a NUL in text, and text longer than its column):
        the request's mistake, and nothing of it was stored (its transaction is rolled back)."""
        log.info("control plane: the database refused a value on %s %s: %s", request.method, request.url.path,
                 type(exc.orig).__name__)  # fmt: skip
        return problem(422, "Invalid value", "a value is not one the database keeps: it holds a NUL character, or "
                                             "is longer than its field allows")  # fmt: skip

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("control plane error on %s %s", request.method, request.url.path, exc_info=exc)
        return problem(500, "Internal error", "the control plane failed; see its log")

    return app


def _field(location: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in location if part not in ("body", "query", "path", "header"))
