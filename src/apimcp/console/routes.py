"""`/console/...`: the console's files, with their security headers; `/console` redirects to `/console/`."""

from __future__ import annotations

from collections.abc import Iterable

import orjson
from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from apimcp.console.assets import asset, load_assets
from apimcp.console.headers import gateway_origin, security_headers

PREFIX = "/console"
GATEWAYS_FILE = "gateways.json"


def console_router(gateway_origins: Iterable[str] = ()) -> APIRouter:
    """The console's routes; `gateway_origins` are the gateways (other than this origin) the try-it panel may call."""
    gateway_origins = list(gateway_origins)
    assets = load_assets()
    # The page reads the gateways it may call from here: the first is the try-it panel's default gateway.
    named = orjson.dumps({"gateways": [gateway_origin(origin) for origin in gateway_origins]})
    assets[GATEWAYS_FILE] = asset(GATEWAYS_FILE, named, "application/json")
    headers = security_headers(gateway_origins)
    router = APIRouter(include_in_schema=False)

    # HEAD answers as GET does, without the body (a link checker or a health probe asks it).
    @router.api_route(PREFIX, methods=["GET", "HEAD"])
    def console_root() -> Response:
        return RedirectResponse(f"{PREFIX}/", status_code=308, headers=headers)

    @router.api_route(PREFIX + "/{path:path}", methods=["GET", "HEAD"])
    def console_file(path: str, request: Request) -> Response:
        asset = assets.get(path)
        if asset is None:
            return Response(
                f"No console page at /console/{path}\n", status_code=404, media_type="text/plain", headers=headers
            )
        own = {**headers, "ETag": asset.etag}
        if request.headers.get("if-none-match") == asset.etag:
            return Response(status_code=304, headers=own)
        if request.method == "HEAD":
            own["Content-Length"] = str(len(asset.content))
            return Response(media_type=asset.media_type, headers=own)
        return Response(asset.content, media_type=asset.media_type, headers=own)

    return router
