"""An imported path is appended to the server's URL as text, so it must begin with `/` (OpenAPI 3.x and Swagger 2.0
both say so); anything else would send calls, with the plan's credentials, to another host. The import refuses it,
naming where it is."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi

INFO = {"title": "Away", "version": "1"}
GET = {"get": {"responses": {"200": {"description": "ok"}}}}
UNROOTED = ["@evil.example/steal", ".evil.example/steal", ":8443/steal", "steal", "evil.example"]


def _pointer(path: object) -> str:
    return "/paths/" + str(path).replace("~", "~0").replace("/", "~1")


def _refusal(document: dict[str, Any]) -> SpecError:
    with pytest.raises(SpecError) as caught:
        import_openapi("away.json", document=document)
    return caught.value


@pytest.mark.parametrize("path", UNROOTED)
def test_an_imported_path_that_does_not_start_with_a_slash_is_refused(path: str) -> None:
    """Finding: `@evil.example/steal` made https://api.example.com@evil.example/steal, carrying the plan's key."""
    document = {
        "openapi": "3.1.0",
        "info": INFO,
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/fine": GET, path: GET},
    }
    refused = _refusal(document)
    assert refused.pointer == _pointer(path)
    assert refused.message.startswith(f"the path {path!r} does not begin with '/'")
    assert str(refused).startswith(f"away.json at {_pointer(path)}: ")


@pytest.mark.parametrize("path", UNROOTED)
def test_a_swagger_path_that_does_not_start_with_a_slash_is_refused(path: str) -> None:
    document = {"swagger": "2.0", "info": INFO, "host": "api.example.com", "paths": {"/fine": GET, path: GET}}
    refused = _refusal(document)
    assert refused.pointer == _pointer(path)  # the 2.0 document's pointer: the conversion keeps the path keys
    assert f"the path {path!r} does not begin with '/'" in refused.message


@pytest.mark.parametrize("base_path", ["@evil.example", ".evil.example/v1", ":8443", "v1"])
def test_a_swagger_base_path_that_does_not_start_with_a_slash_is_refused(base_path: str) -> None:
    """Finding: host `api.example.com` and basePath `@evil.example` made the server https://api.example.com@evil.example."""
    document = {"swagger": "2.0", "info": INFO, "host": "api.example.com", "basePath": base_path, "paths": {"/x": GET}}
    refused = _refusal(document)
    assert refused.pointer == "/basePath"
    assert refused.message.startswith(f"basePath {base_path!r} does not begin with '/'")


def test_a_path_key_that_is_not_text_is_refused_naming_it() -> None:
    document = yaml.safe_load("openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths:\n  404: {get: {responses: {}}}\n")
    refused = _refusal(document)
    assert refused.pointer == "/paths/404"
    assert "the path 404 does not begin with '/'" in refused.message


def test_extensions_among_the_paths_are_not_paths() -> None:
    """`paths` may carry `x-` extensions (OpenAPI 3.x and 2.0): they are neither refused nor made into tools."""
    for document in (
        {"openapi": "3.1.0", "info": INFO, "paths": {"/x": GET, "x-internal": True, "x-owner": {"team": "a"}}},
        {"swagger": "2.0", "info": INFO, "basePath": "/v1", "paths": {"/x": GET, "x-internal": True}},
    ):
        service = import_openapi("ext.json", document=document)
        assert [operation.signature for operation in service.operations] == ["GET /x"]
