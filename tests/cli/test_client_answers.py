"""What the CLI's client makes of answers that are not a control plane's."""

from __future__ import annotations

import pytest
from aiohttp import web

from apimcp.cli.client import ApiError, ControlPlaneClient
from tests.support.live_aiohttp import live_aiohttp


def _sign_in_page() -> web.Application:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Sign in</body></html>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    return app


def test_an_answer_that_is_not_json_is_an_error_naming_the_url_not_a_traceback() -> None:
    with live_aiohttp(_sign_in_page) as url:
        client = ControlPlaneClient(url, "tok")
        with pytest.raises(ApiError, match=r"the answer of http://127\.0\.0\.1:\d+ is not JSON: is it an apimcp"):
            client.get("/plans")
