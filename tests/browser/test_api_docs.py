"""The REST API's reference page (`/api/docs`) in Chromium: Swagger UI runs under the page's CSP when its files are
those of the pinned release, and is refused when a file differs from its integrity digest.

The machine cannot reach jsDelivr: the browser's requests to it are answered with the files of the npm package of
the same release (`tools/node`, installed by `scripts/setup.sh --test`), as jsDelivr serves them.
"""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, Route, expect

from apimcp.control.api.api_docs import DIGESTS, SWAGGER_UI, SWAGGER_UI_VERSION
from tests.browser.conftest import Seen, Served, unexpected

PACKAGE = Path(__file__).parents[2] / "tools" / "node" / "node_modules" / "swagger-ui-dist"


def _from_package(page: Page, tamper: bool = False) -> list[str]:
    """Answer the page's jsDelivr requests from the npm package (the bundle changed by one comment if `tamper`);
    what was asked for, by file name."""
    asked: list[str] = []

    def answer(route: Route) -> None:
        name = route.request.url.rsplit("/", 1)[-1]
        asked.append(name)
        body = (PACKAGE / name).read_bytes()
        if tamper and name == "swagger-ui-bundle.js":
            body += b"\n// changed\n"
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        route.fulfill(status=200, body=body, content_type=kind, headers={"Access-Control-Allow-Origin": "*"})

    page.route(f"{SWAGGER_UI}/**", answer)
    return asked


def test_the_package_is_the_pinned_release() -> None:
    assert '"version": "' + SWAGGER_UI_VERSION + '"' in (PACKAGE / "package.json").read_text()
    assert set(DIGESTS) == {"swagger-ui-bundle.js", "swagger-ui.css"}


def test_swagger_ui_shows_the_api_under_the_page_s_policy(page: Page, served: Served, seen: Seen) -> None:
    asked = _from_package(page)
    response = page.goto(f"{served.base}/api/docs")
    assert response is not None and response.ok
    policy = response.headers["content-security-policy"]
    assert "script-src 'self' https://cdn.jsdelivr.net;" in policy and "'unsafe-inline'" not in policy
    assert response.headers["x-frame-options"] == "DENY"
    expect(page.get_by_role("heading", name="apimcp control plane")).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()  # the operations, read from /api/v1/openapi.json
    assert page.locator(".opblock").count() > 50
    assert sorted(asked) == ["swagger-ui-bundle.js", "swagger-ui.css"]
    assert unexpected(seen.problems) == []  # no CSP violation, no script error


def test_a_changed_swagger_ui_file_is_refused_by_its_digest(page: Page, served: Served, seen: Seen) -> None:
    _from_package(page, tamper=True)
    page.goto(f"{served.base}/api/docs")
    page.wait_for_load_state("load")
    assert any("integrity" in problem for problem in seen.problems), seen.problems
    assert page.locator(".opblock").count() == 0
    assert page.evaluate("typeof window.SwaggerUIBundle") == "undefined"
