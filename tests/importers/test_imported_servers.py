"""Where an imported description says its API is: a Swagger 2.0 `host` is a name or address and a port, nothing
more, and its `schemes` are ones calls use (http, https); an OpenAPI server URL is absolute, a path beginning
with `/`, or relative to the description's own URL (resolved when it was fetched from one, refused otherwise).
Calls never get a URL that is not one."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.catalog.model import RestBinding, Service
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi

INFO = {"title": "Away", "version": "1"}
GET = {"responses": {"200": {"description": "ok"}}}
FETCHED_FROM = "https://alice:pw@specs.example.com/apis/pets.yaml?token=s3cret#top"
"""A description's URL as an import names it: its user name, password, query and fragment are nobody's server."""


def _swagger(host: str) -> dict[str, Any]:
    return {"swagger": "2.0", "info": INFO, "host": host, "basePath": "/v1", "paths": {"/x": {"get": GET}}}


@pytest.mark.parametrize(
    "host",
    [
        "api.example.com@evil.example",
        "https://api.example.com",
        "api.example.com/v1",
        "api.example.com:8443/v1",
        "api.example.com:99999",
        "api.example.com?x=1",
        "api.example.com#x",
        ".evil.example",
        "api example.com",
    ],
)
def test_a_swagger_host_that_is_not_a_name_or_address_with_a_port_is_refused(host: str) -> None:
    """Finding: `api.example.com@evil.example` made the server https://api.example.com@evil.example/v1 (evil.example,
    with the plan's credentials); a scheme or a path made a URL calls could not use."""
    with pytest.raises(SpecError) as refused:
        import_openapi("away.json", document=_swagger(host))
    assert refused.value.pointer == "/host"
    assert refused.value.message.startswith(f"host {host!r} is not a host name or IP address with an optional port")


@pytest.mark.parametrize("host", ["api.example.com", "localhost:8080", "10.0.0.7:9", "[::1]:8443", "my_api.internal"])
def test_a_swagger_host_name_or_address_with_a_port_is_the_server_s(host: str) -> None:
    service = import_openapi("away.json", document=_swagger(host))
    assert [server.url for server in service.servers] == [f"https://{host}/v1"]


@pytest.mark.parametrize(
    ("schemes", "at"),
    [(["ws"], "/schemes"), (["wss", "ws"], "/schemes"), (["ftp"], "/schemes"), (["WSS"], "/paths/~1x/get/schemes")],
)
def test_swagger_schemes_that_only_name_websockets_are_refused_at_schemes(schemes: list[str], at: str) -> None:
    """Finding: `schemes: [ws, wss]` made the servers ws://api.example.com/v1, which no REST call could use."""
    document = _swagger("api.example.com")
    if at == "/schemes":
        document["schemes"] = schemes
    else:
        document["paths"]["/x"]["get"] = {**GET, "schemes": schemes}
    with pytest.raises(SpecError) as refused:
        import_openapi("away.json", document=document)
    assert refused.value.pointer == at
    assert refused.value.message.startswith(f"schemes names only {', '.join(schemes)}: tools call their API over http")


def test_swagger_schemes_beside_http_or_https_are_left_out_with_a_warning() -> None:
    document = {**_swagger("api.example.com"), "schemes": ["wss", "HTTPS", "http"]}
    document["paths"]["/x"]["get"] = {**GET, "schemes": ["ws", "http"]}
    service = import_openapi("away.json", document=document)
    assert [server.url for server in service.servers] == ["https://api.example.com/v1", "http://api.example.com/v1"]
    (operation,) = service.operations
    assert isinstance(operation.binding, RestBinding)
    assert [server.url for server in operation.binding.servers] == ["http://api.example.com/v1"]
    assert [(w.location, w.problem) for w in service.warnings] == [
        ("/schemes", "schemes wss left out: tools call their API over http or https only"),
        ("/paths/~1x/get/schemes", "schemes ws left out: tools call their API over http or https only"),
    ]


def _openapi(level: str, url: str) -> dict[str, Any]:
    """A description whose one server URL is `url`, written at `level`."""
    servers = [{"url": url}]
    if level == "document":
        return {"openapi": "3.1.0", "info": INFO, "servers": servers, "paths": {"/x": {"get": GET}}}
    if level == "path":
        return {"openapi": "3.1.0", "info": INFO, "paths": {"/x": {"servers": servers, "get": GET}}}
    return {"openapi": "3.1.0", "info": INFO, "paths": {"/x": {"get": {**GET, "servers": servers}}}}


POINTERS = {
    "document": "/servers/0/url",
    "path": "/paths/~1x/servers/0/url",
    "operation": "/paths/~1x/get/servers/0/url",
}
RELATIVE = ["v1", "./v1", "../api", "api.example.com/v1", "localhost:8080/v1", "//api.example.com/v1", ""]


def _servers(service: Service, level: str) -> list[str]:
    if level == "document":
        return [server.url for server in service.servers]
    binding = service.operations[0].binding
    assert isinstance(binding, RestBinding)
    return [server.url for server in binding.servers]


@pytest.mark.parametrize("level", POINTERS)
@pytest.mark.parametrize("url", RELATIVE)
def test_a_relative_server_url_not_beginning_with_a_slash_is_refused_without_a_description_url(
    level: str, url: str
) -> None:
    """Finding: such a URL was kept as written and appended to at call time: `v1/x` was no URL (every call failed)
    and `//api.example.com/v1/x` broke the HTTP client (an AssertionError for the request)."""
    with pytest.raises(SpecError) as refused:
        import_openapi("away.json", document=_openapi(level, url))  # a file, or an upload: nothing to resolve against
    assert refused.value.pointer == POINTERS[level]
    assert refused.value.message.startswith(f"the server URL {url!r} is relative")


@pytest.mark.parametrize("level", POINTERS)
@pytest.mark.parametrize(
    ("url", "resolved"),
    [
        ("v1", "https://specs.example.com/apis/v1"),
        ("./v1/", "https://specs.example.com/apis/v1/"),
        ("../api", "https://specs.example.com/api"),
        ("api.example.com/v1", "https://specs.example.com/apis/api.example.com/v1"),  # a relative path, as written
        ("//api.example.com/v1", "https://api.example.com/v1"),
        ("", "https://specs.example.com/apis/pets.yaml"),
    ],
)
def test_a_relative_server_url_is_resolved_against_the_description_s_url(level: str, url: str, resolved: str) -> None:
    service = import_openapi(FETCHED_FROM, document=_openapi(level, url))
    assert _servers(service, level) == [resolved]
    (warning,) = [w for w in service.warnings if w.location == POINTERS[level]]
    assert warning.problem == f"the server URL {url!r} is relative: resolved against the description's URL, {resolved}"
    assert "s3cret" not in repr((service.servers, service.operations, service.warnings))
    assert "alice" not in repr((service.servers, service.operations, service.warnings))


@pytest.mark.parametrize("level", POINTERS)
def test_absolute_server_urls_and_paths_are_kept_as_written(level: str) -> None:
    for url in ("https://{region}.example.com/v1", "http://localhost:8080", "/v1", "/"):
        document = _openapi(level, url)
        if "{region}" in url:
            servers = document["servers"] if level == "document" else _servers_list(document, level)
            servers[0]["variables"] = {"region": {"default": "eu"}}
        for source in ("away.json", FETCHED_FROM):
            service = import_openapi(source, document=document)
            assert _servers(service, level) == [url]
            assert not service.warnings


def _servers_list(document: dict[str, Any], level: str) -> list[dict[str, Any]]:
    item = document["paths"]["/x"]
    return list(item["servers"] if level == "path" else item["get"]["servers"])


@pytest.mark.parametrize("url", ["https:///v1", "http://:8080/v1"])
def test_an_absolute_server_url_without_a_host_is_refused(url: str) -> None:
    with pytest.raises(SpecError) as refused:
        import_openapi("away.json", document=_openapi("document", url))
    assert refused.value.pointer == "/servers/0/url"
    assert refused.value.message == f"the server URL {url!r} names no host"


def test_a_server_url_variable_without_a_default_is_refused() -> None:
    """OpenAPI requires a default for each variable; one without stayed `{host}` in every call's URL."""
    with pytest.raises(SpecError) as refused:
        import_openapi("away.json", document=_openapi("operation", "https://{host}/v1"))
    assert refused.value.pointer == "/paths/~1x/get/servers/0/url"
    assert "uses the variable 'host', which has no default" in refused.value.message
