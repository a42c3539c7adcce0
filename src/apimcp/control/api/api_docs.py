"""The REST API's browsable reference at `/api/docs`: Swagger UI, pinned and checked, under a strict CSP.

The page is the console's origin, where a person's API token lives: what runs there must be exactly what was
reviewed. Swagger UI comes from jsDelivr at one exact release, each file with its Subresource Integrity digest
(the digest of the file in the npm package, which jsDelivr serves unchanged), so a changed file is refused by
the browser instead of run. The page's own script is a file served here, never inline, and the
Content-Security-Policy allows scripts and styles from this origin and that CDN only, connections to this
origin only, and no framing.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from apimcp.console.headers import security_headers

SWAGGER_UI_VERSION: Final = "5.35.0"
CDN: Final = "https://cdn.jsdelivr.net"
SWAGGER_UI: Final = f"{CDN}/npm/swagger-ui-dist@{SWAGGER_UI_VERSION}"
DIGESTS: Final = {
    "swagger-ui-bundle.js": "sha384-gjRm0bEPMeTmMh5jT2cHccIwCUZSTd8YC+j0d0sXw0MdGEfScduGpSyF3ZSSLkX9",
    "swagger-ui.css": "sha384-WlYgdmXYOOBWL5apwjDEZwN+U3HmXSSu5R6V5aGxEcf7z+KuRNwBhoxKVN1i3D5I",
}
"""The SHA-384 of each file of swagger-ui-dist at `SWAGGER_UI_VERSION`, as the npm registry has it."""

DOCS_PATH: Final = "/api/docs"
_START_PATH: Final = f"{DOCS_PATH}/start.js"

_PAGE: Final = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>apimcp control plane API</title>
<link rel="stylesheet" href="{SWAGGER_UI}/swagger-ui.css" integrity="{DIGESTS["swagger-ui.css"]}"
      crossorigin="anonymous">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{SWAGGER_UI}/swagger-ui-bundle.js" integrity="{DIGESTS["swagger-ui-bundle.js"]}"
        crossorigin="anonymous"></script>
<script src="{_START_PATH}"></script>
</body>
</html>
"""

_START: Final = """"use strict";
// No validator badge: it would send the description to validator.swagger.io.
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
"""


def content_security_policy() -> str:
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' {CDN}",
            f"style-src 'self' {CDN}",
            "img-src 'self' data:",
            "connect-src 'self'",  # the description, and "try it out" calls of this API
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def _headers() -> dict[str, str]:
    return {**security_headers(), "Content-Security-Policy": content_security_policy()}


def api_docs_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(DOCS_PATH)
    def page() -> HTMLResponse:
        return HTMLResponse(_PAGE, headers=_headers())

    @router.get(_START_PATH)
    def start() -> Response:
        return Response(_START, media_type="text/javascript", headers=_headers())

    return router
