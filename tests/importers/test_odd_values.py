"""Values of a kind the specification does not allow, where an importer expected another: each is read as saying
nothing, or refused naming where it is; none is an exception of Python's own (an upload's 500)."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.catalog.model import Service
from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi


def _imported(document: dict[str, Any]) -> Service:
    return import_openapi("upload.json", document=document, external_references=False)


def _openapi(**extra: Any) -> dict[str, Any]:
    get = {"operationId": "x", "responses": {"200": {"description": "ok"}}}
    return {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://a.example"}],
            "paths": {"/x": {"get": get}}, **extra}  # fmt: skip


def test_a_server_variable_s_enum_that_is_no_list_says_nothing() -> None:
    servers = [{"url": "https://{h}.example.com", "variables": {"h": {"default": "api", "enum": 5}}}]
    (server,) = _imported(_openapi(servers=servers)).servers
    assert server.variables["h"].enum == () and server.resolve() == "https://api.example.com"


@pytest.mark.parametrize("url", ["https://[::1/v1", "https://{h}.example.com"])
def test_a_server_url_that_is_no_url_is_refused_where_it_is(url: str) -> None:
    servers = [{"url": url, "variables": {"h": {"default": "[1]"}}}]
    with pytest.raises(SpecError, match=r"at /servers/0/url: the server URL .* is not a URL"):
        _imported(_openapi(servers=servers))


def test_a_reference_index_in_other_digits_than_ascii_is_no_index() -> None:
    document = _openapi(components={"parameters": {"list": [{"name": "a", "in": "query"}]}})
    document["paths"]["/x"]["get"]["parameters"] = [{"$ref": "#/components/parameters/list/²"}]
    with pytest.raises(SpecError, match="does not exist"):
        _imported(document)


def _swagger(parameter: dict[str, Any], security: dict[str, Any]) -> dict[str, Any]:
    get = {"operationId": "x", "parameters": [parameter], "responses": {"200": {"description": "ok"}}}
    return {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "host": "a.example",
            "paths": {"/x": {"get": get}}, "securityDefinitions": security}  # fmt: skip


def test_swagger_2_keywords_of_another_kind_are_read_or_refused_where_they_are() -> None:
    listed = {"name": "ids", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": ["csv"]}
    (operation,) = _imported(_swagger(listed, {})).operations
    assert [p.name for p in operation.binding.parameters] == ["ids"]  # type: ignore[union-attr]
    flow = {"o": {"type": "oauth2", "flow": {"implicit": True}, "authorizationUrl": "https://a.example/auth"}}
    plain = {"name": "q", "in": "query", "type": "string"}
    with pytest.raises(SpecError, match="at /securityDefinitions/o/flow: unknown OAuth2 flow"):
        _imported(_swagger(plain, flow))
