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


def _with_body(schema: dict[str, Any], version: str = "3.0.3", **extra: Any) -> dict[str, Any]:
    body = {"required": True, "content": {"application/json": {"schema": schema}}}
    post = {"operationId": "make", "requestBody": body, "responses": {"200": {"description": "ok"}}, **extra}
    return {"openapi": version, "info": {"title": "t", "version": "1"}, "servers": [{"url": "https://a.example"}],
            "paths": {"/items/{id}": {"post": post}}}  # fmt: skip


def test_a_parameter_renamed_for_a_body_field_takes_a_name_no_field_has() -> None:
    """The finding: `id__path` was taken by a body field too, and the parameter's schema replaced the field's (or,
    the field required, the operation was left out with a warning only)."""
    fields = {"type": "object", "properties": {"id": {"type": "integer"}, "id__path": {"type": "boolean"}},
              "required": ["id__path"]}  # fmt: skip
    path_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    (operation,) = _imported(_with_body(fields, parameters=[path_id])).operations
    schema, binding = operation.input_schema, operation.binding
    assert schema["properties"]["id__path"] == {"type": "boolean"} and schema["properties"]["id__path_2"]
    assert [(p.argument, p.name) for p in binding.parameters] == [("id__path_2", "id")]  # type: ignore[union-attr]
    assert binding.body.fields == ("id", "id__path")  # type: ignore[union-attr]


def test_a_body_that_may_be_null_stays_one_argument_with_its_fields() -> None:
    """The finding: `nullable: true` beside `properties` (no `type`) made the flattened tool lose every field."""
    nullable = {"nullable": True, "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}
    (operation,) = _imported(_with_body(nullable)).operations
    body = operation.input_schema["properties"]["body"]
    assert {"type": "null"} in body["anyOf"] and body["anyOf"][0]["properties"]["size"] == {"type": "integer"}
    assert operation.binding.body.argument == "body"  # type: ignore[union-attr]


def test_what_a_3_1_body_says_beside_its_reference_is_kept() -> None:
    """The finding: `properties` and `required` beside a body's `$ref` were dropped when the body was flattened,
    though OpenAPI 3.1 applies them (an `owner` field the API requires could not be sent)."""
    document = _with_body({"$ref": "#/components/schemas/Base", "properties": {"owner": {"type": "string"}},
                           "required": ["name", "owner"]}, "3.1.0")  # fmt: skip
    document["components"] = {"schemas": {"Base": {"type": "object", "properties": {"name": {"type": "string"}}}}}
    (operation,) = _imported(document).operations
    body = operation.input_schema["properties"]["body"]
    assert body["properties"]["owner"] == {"type": "string"} and body["required"] == ["name", "owner"]
    assert body["$ref"] == "#/$defs/Base"
    document["openapi"] = "3.0.3"  # 3.0 ignores what is beside a `$ref`: flattened from the target, as before
    (operation,) = _imported(document).operations
    assert list(operation.input_schema["properties"]) == ["name"]
