"""URLs that cannot be parsed (an unclosed IPv6 bracket, a port out of range) are refused as such wherever they are
read: a BadUrl from the guarded fetch, a SpecError from the importers, a 422 from the REST API; never a ValueError
(a 500 with a traceback). Each is refused before connecting anywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi
from apimcp.importers.openapi.loading import DocumentSet, fetch, is_url
from apimcp.safety.addresses import AddressPolicy
from apimcp.safety.fetch import BadUrl, Fetcher, join_url, split_url, url_origin
from tests.control.api_harness import import_echo, problem
from tests.control.test_api_fetch_safety import control_plane
from tests.support.fetching import forbid_connections
from tests.support.live_aiohttp import live_aiohttp

LOOPBACK = AddressPolicy.allowing(["127.0.0.0/8"])
MALFORMED = ["http://[::1", "http://[::1/x", "http://example.com:99999/y.json", "https://example.com:-1/"]


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection the guarded fetch attempts fails the test: these URLs are refused before connecting."""
    forbid_connections(monkeypatch)


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.usefixtures("no_connections")
def test_malformed_urls_escape_as_value_error_from_the_url_helpers(url: str) -> None:
    """Finding: `Port out of range` and `Invalid IPv6 URL` escaped as ValueError; they are BadUrl now."""
    with pytest.raises(BadUrl, match=r"(is not a valid URL|the URL is not valid) \((Invalid IPv6 URL|Port)"):
        split_url(url)
    with pytest.raises(BadUrl):
        url_origin(url)
    with pytest.raises(BadUrl):
        join_url("https://example.com/api.yaml", url)
    with pytest.raises(BadUrl):
        Fetcher().get(url)


def test_a_malformed_url_is_not_shown_when_it_cannot_be_split() -> None:
    with pytest.raises(BadUrl) as caught:
        split_url("http://user:secret@[::1/x")
    assert str(caught.value) == "the URL is not valid (Invalid IPv6 URL)"


def test_malformed_urls_escape_as_value_error_from_a_redirect_location() -> None:
    """Finding: a server answering `302 Location: http://[::1/x` made `Fetcher.request` raise ValueError."""
    seen: list[str] = []

    def app() -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            seen.append(request.path)
            return web.Response(status=302, headers={"Location": request.query["to"]})

        application = web.Application()
        application.router.add_get("/{tail:.*}", handle)
        return application

    with live_aiohttp(app) as base:
        fetcher = Fetcher(LOOPBACK)
        for location, problem_text in [("http://[::1/x", "Invalid IPv6 URL"), ("//127.0.0.1:99999/", "Port out of")]:
            with pytest.raises(BadUrl, match=f"redirected to a Location that is not a URL: .*{problem_text}"):
                fetcher.get(f"{base}/start?to={location}")
    assert seen == ["/start", "/start"]  # the Location was never requested


@pytest.mark.usefixtures("no_connections")
def test_malformed_urls_escape_as_value_error_from_the_openapi_loader() -> None:
    """Finding: `$ref: http://example.com:99999/y.json` raised `Port out of range` out of the loader."""
    main = "https://descriptions.example/api.yaml"
    documents = DocumentSet(main, Fetcher(), {"openapi": "3.1.0"})
    for base, reference in [
        (main, "http://example.com:99999/y.json"),
        (main, "//example.com:99999/y.json"),
        ("https://descriptions.example:99999/api.yaml", "y.json"),
    ]:
        with pytest.raises(SpecError, match=r"cannot be followed: .* is not a valid URL \(Port out of range"):
            documents.absolute(base, reference)
    with pytest.raises(SpecError, match=r"could not fetch it: .* is not a valid URL \(Port out of range"):
        DocumentSet("https://descriptions.example:99999/api.yaml", Fetcher()).main()
    with pytest.raises(SpecError, match=r"the reference 'http://\[::1/y.json' cannot be followed: .*Invalid IPv6 URL"):
        documents.absolute(main, "http://[::1/y.json")
    with pytest.raises(SpecError, match=r"could not fetch it: the URL is not valid \(Invalid IPv6 URL\)"):
        fetch("http://[::1", Fetcher())
    assert is_url("http://[::1")  # an http URL, if a broken one: reading it says what is wrong


@pytest.mark.usefixtures("no_connections")
def test_a_ref_to_a_port_out_of_range_is_refused_before_connecting() -> None:
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/a": {
                "get": {
                    "operationId": "a",
                    "responses": {"200": {"$ref": "http://example.com:99999/y.json#/r"}},
                }
            }
        },
    }
    with pytest.raises(SpecError, match=r"Port out of range"):
        import_openapi("https://descriptions.example/api.yaml", document=document)


@pytest.mark.usefixtures("no_connections")
def test_malformed_urls_escape_as_value_error_from_the_rest_api(tmp_path: Path) -> None:
    """Finding: `POST /api/v1/services {"url": "http://[::1"}` was a 500 with `ValueError: Invalid IPv6 URL`."""
    with control_plane(tmp_path) as api:
        acme = api.org("acme")
        for url in MALFORMED:
            answer = problem(acme.user.post("/services", json={"url": url}), 422, "url")
            assert "could not fetch it: " in answer["detail"]
            assert "Invalid IPv6 URL" in answer["detail"] or "Port" in answer["detail"]
        introspect = {"url": "http://[::1/graphql", "introspect": True, "name": "g", "version": "1"}
        assert "Invalid IPv6 URL" in problem(acme.user.post("/services", json=introspect), 422)["detail"]
        service = import_echo(acme.user)
        attached = acme.user.post(f"/services/{service['id']}/artifacts/from-url", json={"url": "http://[::1"})
        assert "Invalid IPv6 URL" in problem(attached, 422, "url")["detail"]
