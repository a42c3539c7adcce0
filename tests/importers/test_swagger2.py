"""Swagger 2.0 to OpenAPI 3.0.3 conversion (apimcp.importers.openapi.swagger2)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi.swagger2 import convert_swagger2
from tests.support.corpus import corpus_dir

INFO = {"title": "T", "version": "1"}


def swagger(**fields: Any) -> dict[str, Any]:
    return {"swagger": "2.0", "info": INFO, "paths": {}, **fields}


def one_operation(operation: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Convert a document with a single `POST /x` operation and return that operation."""
    converted = convert_swagger2(swagger(paths={"/x": {"post": operation}}, **fields))
    result: dict[str, Any] = converted["paths"]["/x"]["post"]
    return result


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


# --------------------------------------------------------------------------- document


def test_minimal_document() -> None:
    assert convert_swagger2(swagger()) == {
        "openapi": "3.0.3",
        "info": INFO,
        "servers": [{"url": "/"}],
        "paths": {},
    }


def test_info_tags_external_docs_security_and_extensions_are_copied_as_is() -> None:
    tags = [{"name": "pets", "description": "Pets"}]
    docs = {"url": "https://example.com/docs"}
    security = [{"key": []}]
    document = swagger(tags=tags, externalDocs=docs, security=security, **{"x-logo": {"url": "l.png"}})
    document["securityDefinitions"] = {"key": {"type": "apiKey", "name": "k", "in": "query"}}
    out = convert_swagger2(document)
    assert out["info"] is INFO
    assert out["tags"] is tags
    assert out["externalDocs"] is docs
    assert out["security"] is security
    assert out["x-logo"] == {"url": "l.png"}
    assert "swagger" not in out


def test_yaml_integer_keys_become_strings() -> None:
    document = yaml.safe_load(
        "swagger: '2.0'\ninfo: {title: T, version: '1'}\n"
        "paths: {/a: {get: {responses: {200: {description: ok}}}}}\n"
        "definitions: {1: {type: string}}\n"
    )
    out = convert_swagger2(document)
    assert out["paths"]["/a"]["get"]["responses"] == {"200": {"description": "ok"}}
    assert out["components"]["schemas"] == {"1": {"type": "string"}}


def test_unquoted_yaml_version_is_accepted() -> None:
    assert convert_swagger2(yaml.safe_load("swagger: 2.0\ninfo: {title: T, version: '1'}\npaths: {}\n"))["openapi"] == (
        "3.0.3"
    )


@pytest.mark.parametrize(
    ("document", "pointer"),
    [
        ({"openapi": "3.0.0", "info": INFO, "paths": {}}, "/swagger"),
        ({"swagger": "1.2", "info": INFO, "paths": {}}, "/swagger"),
        ({"swagger": "2.0", "info": INFO}, "/paths"),
        ({"swagger": "2.0", "info": INFO, "paths": []}, "/paths"),
        ({"swagger": "2.0", "info": INFO, "paths": {"/a": []}}, "/paths/~1a"),
        ({"swagger": "2.0", "info": INFO, "paths": {"/a": {"get": {"parameters": {}}}}}, "/paths/~1a/get/parameters"),
        (
            {"swagger": "2.0", "info": INFO, "paths": {"/a/{b}": {"get": {"parameters": [{"name": "b", "in": "p"}]}}}},
            "/paths/~1a~1{b}/get/parameters/0/in",
        ),
        ({"swagger": "2.0", "info": INFO, "paths": {}, "consumes": "application/json"}, "/consumes"),
        ({"swagger": "2.0", "info": INFO, "paths": {}, "definitions": []}, "/definitions"),
        (
            {"swagger": "2.0", "info": INFO, "paths": {}, "securityDefinitions": {"s": {"type": "digest"}}},
            "/securityDefinitions/s/type",
        ),
        (
            {
                "swagger": "2.0",
                "info": INFO,
                "paths": {},
                "securityDefinitions": {"o": {"type": "oauth2", "flow": "device", "scopes": {}}},
            },
            "/securityDefinitions/o/flow",
        ),
    ],
)
def test_unusable_documents_raise_spec_error_with_a_pointer(document: dict[str, Any], pointer: str) -> None:
    with pytest.raises(SpecError) as caught:
        convert_swagger2(document, source="api.yaml")
    assert caught.value.source == "api.yaml"
    assert caught.value.pointer == pointer
    assert str(caught.value).startswith(f"api.yaml at {pointer}: ")


def test_body_and_form_data_together_are_rejected() -> None:
    operation = {
        "parameters": [
            {"name": "b", "in": "body", "schema": {"type": "object"}},
            {"name": "f", "in": "formData", "type": "string"},
        ],
        "responses": {},
    }
    with pytest.raises(SpecError, match="body and formData") as caught:
        one_operation(operation)
    assert caught.value.pointer == "/paths/~1x/post/parameters"


def test_two_body_parameters_are_rejected() -> None:
    body = {"in": "body", "schema": {"type": "object"}}
    with pytest.raises(SpecError, match="only one body") as caught:
        one_operation({"parameters": [{**body, "name": "a"}, {**body, "name": "b"}], "responses": {}})
    assert caught.value.pointer == "/paths/~1x/post/parameters/1"


def test_the_input_is_not_mutated() -> None:
    document = swagger(
        host="api.example.com",
        consumes=["application/json"],
        paths={
            "/pets/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "type": "string"},
                    {"name": "note", "in": "formData", "type": "string"},
                ],
                "put": {
                    "parameters": [{"$ref": "#/parameters/tags"}, {"name": "photo", "in": "formData", "type": "file"}],
                    "responses": {200: {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}},
                },
            }
        },
        definitions={
            "Pet": {
                "type": "object",
                "discriminator": "kind",
                "properties": {"owner": {"$ref": "#/definitions/Owner", "x-nullable": True}},
            },
            "Owner": {"type": "object"},
        },
        parameters={"tags": {"name": "tags", "in": "query", "type": "array", "items": {"type": "string"}}},
        responses={"Gone": {"description": "gone", "schema": {"type": "file"}}},
    )
    before = copy.deepcopy(document)
    convert_swagger2(document)
    assert document == before


# --------------------------------------------------------------------------- servers


@pytest.mark.parametrize(
    ("fields", "servers"),
    [
        (
            {"host": "api.example.com:8443", "basePath": "/v2", "schemes": ["http", "https"]},
            [{"url": "http://api.example.com:8443/v2"}, {"url": "https://api.example.com:8443/v2"}],
        ),
        ({"host": "api.example.com", "basePath": "/v2"}, [{"url": "https://api.example.com/v2"}]),
        ({"host": "api.example.com"}, [{"url": "https://api.example.com"}]),
        ({"basePath": "/v2", "schemes": ["http"]}, [{"url": "/v2"}]),
        ({}, [{"url": "/"}]),
    ],
)
def test_servers(fields: dict[str, Any], servers: list[dict[str, Any]]) -> None:
    assert convert_swagger2(swagger(**fields))["servers"] == servers


def test_operation_schemes_become_operation_servers_when_they_differ() -> None:
    document = swagger(
        host="h",
        basePath="/b",
        schemes=["https"],
        paths={
            "/a": {"get": {"schemes": ["http"], "responses": {}}, "put": {"schemes": ["https"], "responses": {}}},
        },
    )
    paths = convert_swagger2(document)["paths"]
    assert paths["/a"]["get"]["servers"] == [{"url": "http://h/b"}]
    assert "servers" not in paths["/a"]["put"]


# --------------------------------------------------------------------------- components


def test_definitions_become_component_schemas_and_unchanged_schemas_are_shared() -> None:
    owner = {"type": "object", "properties": {"name": {"type": "string"}}}
    pet = {"type": "object", "properties": {"owner": {"$ref": "#/definitions/Owner"}, "name": {"type": "string"}}}
    out = convert_swagger2(swagger(definitions={"Owner": owner, "Pet": pet}))
    schemas = out["components"]["schemas"]
    assert schemas["Owner"] is owner
    assert schemas["Pet"] == {
        "type": "object",
        "properties": {"owner": {"$ref": "#/components/schemas/Owner"}, "name": {"type": "string"}},
    }
    assert schemas["Pet"]["properties"]["name"] is pet["properties"]["name"]


def test_global_parameters_split_into_parameters_and_request_bodies() -> None:
    document = swagger(
        consumes=["application/json", "application/xml"],
        parameters={
            "limit": {"name": "limit", "in": "query", "type": "integer", "maximum": 100},
            "pet": {
                "name": "pet",
                "in": "body",
                "required": True,
                "description": "The pet",
                "schema": {"$ref": "#/definitions/Pet"},
            },
            "file": {"name": "file", "in": "formData", "type": "file", "required": True},
        },
    )
    components = convert_swagger2(document)["components"]
    assert components["parameters"] == {
        "limit": {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
    }
    pet_schema = {"schema": {"$ref": "#/components/schemas/Pet"}}
    assert components["requestBodies"] == {
        "pet": {
            "description": "The pet",
            "content": {"application/json": pet_schema, "application/xml": pet_schema},
            "required": True,
            "x-codegen-request-body-name": "pet",
        },
        "file": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                }
            },
            "required": True,
        },
    }


def test_global_responses_become_component_responses() -> None:
    document = swagger(
        produces=["application/json"],
        responses={"NotFound": {"description": "missing", "schema": {"$ref": "#/definitions/Error"}}},
    )
    assert convert_swagger2(document)["components"]["responses"] == {
        "NotFound": {
            "description": "missing",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    }


def test_security_definitions() -> None:
    document = swagger(
        securityDefinitions={
            "basic": {"type": "basic", "description": "user and password"},
            "key": {"type": "apiKey", "name": "X-Key", "in": "header", "x-vendor": 1},
            "implicit": {
                "type": "oauth2",
                "flow": "implicit",
                "authorizationUrl": "https://a",
                "scopes": {"r": "read"},
            },
            "password": {"type": "oauth2", "flow": "password", "tokenUrl": "https://t", "scopes": {}},
            "application": {"type": "oauth2", "flow": "application", "tokenUrl": "https://t"},
            "accessCode": {
                "type": "oauth2",
                "flow": "accessCode",
                "authorizationUrl": "https://a",
                "tokenUrl": "https://t",
                "scopes": {"w": "write", "x-ext": "not a scope"},
            },
        }
    )
    assert convert_swagger2(document)["components"]["securitySchemes"] == {
        "basic": {"type": "http", "scheme": "basic", "description": "user and password"},
        "key": {"type": "apiKey", "name": "X-Key", "in": "header", "x-vendor": 1},
        "implicit": {
            "type": "oauth2",
            "flows": {"implicit": {"authorizationUrl": "https://a", "scopes": {"r": "read"}}},
        },
        "password": {"type": "oauth2", "flows": {"password": {"tokenUrl": "https://t", "scopes": {}}}},
        "application": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {}}}},
        "accessCode": {
            "type": "oauth2",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": "https://a",
                    "tokenUrl": "https://t",
                    "scopes": {"w": "write"},
                }
            },
        },
    }


# --------------------------------------------------------------------------- $ref rewriting


@pytest.mark.parametrize(
    ("ref", "rewritten"),
    [
        ("#/definitions/Pet", "#/components/schemas/Pet"),
        ("#/definitions/Pet/properties/name", "#/components/schemas/Pet/properties/name"),
        ("#/definitions/a~1b", "#/components/schemas/a~1b"),
        ("other.yaml#/definitions/Pet", "other.yaml#/components/schemas/Pet"),
        (
            "https://example.com/common.json#/definitions/Error",
            "https://example.com/common.json#/components/schemas/Error",
        ),
        ("#/responses/NotFound", "#/components/responses/NotFound"),
        ("#/responses/NotFound/schema", "#/components/responses/NotFound/content/application~1json/schema"),
        ("#/parameters/limit", "#/components/parameters/limit"),
        ("#/parameters/limit/maximum", "#/components/parameters/limit/schema/maximum"),
        ("#/parameters/pet", "#/components/requestBodies/pet"),
        ("#/parameters/pet/schema", "#/components/requestBodies/pet/content/application~1json/schema"),
        ("#/parameters/upload", "#/components/requestBodies/upload"),
        (
            "#/parameters/upload/type",
            "#/components/requestBodies/upload/content/multipart~1form-data/schema/properties/upload/type",
        ),
        ("#/responses/NotFound/examples/text~1plain", "#/components/responses/NotFound/content/text~1plain/example"),
        ("#/responses/NotFound/headers/X-Id/type", "#/components/responses/NotFound/headers/X-Id/schema/type"),
        ("other.yaml#/parameters/pet", "other.yaml#/components/parameters/pet"),
        ("Pet.yaml", "Pet.yaml"),
        ("common.yaml#/Pet", "common.yaml#/Pet"),
    ],
)
def test_refs_are_rewritten(ref: str, rewritten: str) -> None:
    document = swagger(
        definitions={"Holder": {"type": "object", "properties": {"value": {"$ref": ref}}}},
        parameters={
            "limit": {"name": "limit", "in": "query", "type": "integer", "maximum": 10},
            "pet": {"name": "pet", "in": "body", "schema": {"type": "object"}},
            "upload": {"name": "upload", "in": "formData", "type": "file"},
        },
    )
    holder = convert_swagger2(document)["components"]["schemas"]["Holder"]
    assert holder["properties"]["value"] == {"$ref": rewritten}


def test_parameter_refs_in_operations() -> None:
    document = swagger(
        parameters={
            "limit": {"name": "limit", "in": "query", "type": "integer"},
            "pet": {"name": "pet", "in": "body", "required": True, "schema": {"$ref": "#/definitions/Pet"}},
            "note": {"name": "note", "in": "formData", "type": "string", "required": True},
        },
        paths={
            "/pets": {
                "post": {
                    "parameters": [{"$ref": "#/parameters/limit"}, {"$ref": "#/parameters/pet"}],
                    "responses": {},
                },
                "put": {
                    "consumes": ["application/xml"],
                    "parameters": [{"$ref": "#/parameters/pet"}],
                    "responses": {},
                },
                "patch": {
                    "parameters": [{"$ref": "#/parameters/note"}, {"name": "when", "in": "formData", "type": "string"}],
                    "responses": {},
                },
                "delete": {"parameters": [{"$ref": "other.yaml#/parameters/id"}], "responses": {}},
            }
        },
    )
    pets = convert_swagger2(document)["paths"]["/pets"]
    assert pets["post"] == {
        "parameters": [{"$ref": "#/components/parameters/limit"}],
        "requestBody": {"$ref": "#/components/requestBodies/pet"},
        "responses": {},
    }
    # The shared body is written for application/json; this operation consumes XML only.
    assert pets["put"]["requestBody"] == {
        "content": {"application/xml": {"schema": {"$ref": "#/components/schemas/Pet"}}},
        "required": True,
        "x-codegen-request-body-name": "pet",
    }
    # formData references are inlined: the fields of one form make one request body.
    assert pets["patch"]["requestBody"] == {
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {"note": {"type": "string"}, "when": {"type": "string"}},
                    "required": ["note"],
                }
            }
        },
        "required": True,
    }
    assert pets["delete"]["parameters"] == [{"$ref": "other.yaml#/components/parameters/id"}]


def test_response_refs_in_operations() -> None:
    document = swagger(
        responses={
            "Error": {"description": "error", "schema": {"$ref": "#/definitions/Error"}},
            "Empty": {"description": "nothing"},
        },
        paths={
            "/a": {
                "get": {"responses": {"default": {"$ref": "#/responses/Error"}}},
                "put": {
                    "produces": ["text/plain"],
                    "responses": {"default": {"$ref": "#/responses/Error"}, "204": {"$ref": "#/responses/Empty"}},
                },
            }
        },
    )
    paths = convert_swagger2(document)["paths"]
    assert paths["/a"]["get"]["responses"] == {"default": {"$ref": "#/components/responses/Error"}}
    assert paths["/a"]["put"]["responses"] == {
        "default": {
            "description": "error",
            "content": {"text/plain": {"schema": {"$ref": "#/components/schemas/Error"}}},
        },
        "204": {"$ref": "#/components/responses/Empty"},
    }


# --------------------------------------------------------------------------- schemas


def test_schema_keywords_specific_to_2_0() -> None:
    document = swagger(
        definitions={
            "Pet": {
                "type": "object",
                "discriminator": "petType",
                "required": ["petType"],
                "properties": {
                    "petType": {"type": "string"},
                    "nickname": {"type": "string", "x-nullable": True},
                    "photo": {"type": "file", "format": "byte"},
                    "owner": {"$ref": "#/definitions/Owner", "x-nullable": True},
                    "tags": {"type": "array", "items": {"$ref": "#/definitions/Tag"}},
                    "extra": {"additionalProperties": {"$ref": "#/definitions/Tag"}},
                    "either": {"type": ["integer", "null"]},
                },
            },
            "Cat": {"allOf": [{"$ref": "#/definitions/Pet"}, {"type": "object"}]},
        }
    )
    schemas = convert_swagger2(document)["components"]["schemas"]
    assert schemas["Pet"] == {
        "type": "object",
        "discriminator": {"propertyName": "petType"},
        "required": ["petType"],
        "properties": {
            "petType": {"type": "string"},
            "nickname": {"type": "string", "nullable": True},
            "photo": {"type": "string", "format": "binary"},
            "owner": {"allOf": [{"$ref": "#/components/schemas/Owner"}], "nullable": True},
            "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
            "extra": {"additionalProperties": {"$ref": "#/components/schemas/Tag"}},
            "either": {"type": "integer", "nullable": True},
        },
    }
    assert schemas["Cat"] == {"allOf": [{"$ref": "#/components/schemas/Pet"}, {"type": "object"}]}
    assert schemas["Cat"]["allOf"][1] is document["definitions"]["Cat"]["allOf"][1]


def test_examples_and_extensions_inside_schemas_are_left_alone() -> None:
    schema = {"type": "object", "example": {"$ref": "#/definitions/X"}, "x-meta": {"$ref": "#/definitions/X"}}
    out = convert_swagger2(swagger(definitions={"S": schema}))
    assert out["components"]["schemas"]["S"] is schema


# --------------------------------------------------------------------------- parameters


def test_parameter_value_keywords_move_into_schema() -> None:
    parameter = {
        "name": "size",
        "in": "query",
        "description": "Page size",
        "required": False,
        "allowEmptyValue": True,
        "type": "integer",
        "format": "int32",
        "default": 20,
        "minimum": 1,
        "maximum": 100,
        "exclusiveMaximum": True,
        "multipleOf": 5,
        "x-example": 40,
        "x-internal": True,
    }
    operation = one_operation({"parameters": [parameter], "responses": {}})
    assert operation["parameters"] == [
        {
            "name": "size",
            "in": "query",
            "description": "Page size",
            "required": False,
            "allowEmptyValue": True,
            "schema": {
                "type": "integer",
                "format": "int32",
                "default": 20,
                "maximum": 100,
                "exclusiveMaximum": True,
                "minimum": 1,
                "multipleOf": 5,
            },
            "example": 40,
            "x-internal": True,
        }
    ]


def test_array_parameter_items_and_string_keywords() -> None:
    parameter = {
        "name": "ids",
        "in": "header",
        "type": "array",
        "minItems": 1,
        "uniqueItems": True,
        "items": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8, "enum": ["ab", "cd"]},
    }
    assert one_operation({"parameters": [parameter], "responses": {}})["parameters"] == [
        {
            "name": "ids",
            "in": "header",
            "style": "simple",
            "explode": False,
            "schema": {
                "type": "array",
                "items": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$", "enum": ["ab", "cd"]},
                "minItems": 1,
                "uniqueItems": True,
            },
        }
    ]


UNSUPPORTED = "Note: collectionFormat {!r} cannot be expressed in OpenAPI 3.0; values are sent comma-separated."


@pytest.mark.parametrize(
    ("location", "collection_format", "style", "explode", "note"),
    [
        ("query", None, "form", False, None),
        ("query", "csv", "form", False, None),
        ("query", "ssv", "spaceDelimited", False, None),
        ("query", "pipes", "pipeDelimited", False, None),
        ("query", "multi", "form", True, None),
        ("query", "tsv", "form", False, "tsv"),
        ("path", None, "simple", False, None),
        ("path", "csv", "simple", False, None),
        ("header", "csv", "simple", False, None),
        ("header", "pipes", "simple", False, "pipes"),
        ("path", "tsv", "simple", False, "tsv"),
    ],
)
def test_collection_format_becomes_style_and_explode(
    location: str, collection_format: str | None, style: str, explode: bool, note: str | None
) -> None:
    parameter: dict[str, Any] = {
        "name": "v",
        "in": location,
        "required": True,
        "description": "Values",
        "type": "array",
        "items": {"type": "string"},
    }
    if collection_format is not None:
        parameter["collectionFormat"] = collection_format
    (converted,) = one_operation({"parameters": [parameter], "responses": {}})["parameters"]
    assert converted == {
        "name": "v",
        "in": location,
        "description": "Values" if note is None else f"Values\n\n{UNSUPPORTED.format(note)}",
        "required": True,
        "style": style,
        "explode": explode,
        "schema": {"type": "array", "items": {"type": "string"}},
    }


def test_body_parameter_becomes_request_body_for_each_consumed_media_type() -> None:
    body = {"name": "pet", "in": "body", "description": "A pet", "required": True, "schema": {"type": "object"}}
    operation = one_operation(
        {"consumes": ["application/json", "application/xml"], "parameters": [body], "responses": {}},
        consumes=["text/plain"],
    )
    assert operation == {
        "requestBody": {
            "description": "A pet",
            "content": {
                "application/json": {"schema": {"type": "object"}},
                "application/xml": {"schema": {"type": "object"}},
            },
            "required": True,
            "x-codegen-request-body-name": "pet",
        },
        "responses": {},
    }
    assert operation["requestBody"]["content"]["application/json"]["schema"] is body["schema"]


def test_body_media_types_come_from_the_document_then_default_to_json() -> None:
    body = {"name": "b", "in": "body", "schema": {"type": "string"}}
    from_document = one_operation({"parameters": [body], "responses": {}}, consumes=["text/plain"])
    assert list(from_document["requestBody"]["content"]) == ["text/plain"]
    default = one_operation({"parameters": [body], "responses": {}})
    assert default["requestBody"] == {
        "content": {"application/json": {"schema": {"type": "string"}}},
        "x-codegen-request-body-name": "b",
    }


def test_form_data_becomes_an_urlencoded_object_body() -> None:
    parameters = [
        {"name": "name", "in": "formData", "type": "string", "required": True, "description": "Pet name"},
        {"name": "age", "in": "formData", "type": "integer", "minimum": 0},
        {"name": "tags", "in": "formData", "type": "array", "items": {"type": "string"}},
        {"name": "colors", "in": "formData", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"},
    ]
    operation = one_operation({"parameters": parameters, "responses": {}})
    assert operation["requestBody"] == {
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Pet name"},
                        "age": {"type": "integer", "minimum": 0},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "colors": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["name"],
                },
                "encoding": {
                    "tags": {"style": "form", "explode": False},
                    "colors": {"style": "form", "explode": True},
                },
            }
        },
        "required": True,
    }
    assert "parameters" not in operation


def test_a_file_field_makes_the_form_multipart() -> None:
    parameters = [
        {"name": "file", "in": "formData", "type": "file", "description": "The upload"},
        {"name": "caption", "in": "formData", "type": "string"},
    ]
    operation = one_operation({"consumes": ["application/x-www-form-urlencoded"], "parameters": parameters})
    assert operation["requestBody"] == {
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "The upload"},
                        "caption": {"type": "string"},
                    },
                }
            }
        }
    }


def test_consumes_multipart_makes_the_form_multipart() -> None:
    parameters = [{"name": "caption", "in": "formData", "type": "string"}]
    operation = one_operation({"parameters": parameters}, consumes=["multipart/form-data"])
    assert list(operation["requestBody"]["content"]) == ["multipart/form-data"]


def test_path_level_parameters() -> None:
    document = swagger(
        paths={
            "/pets/{id}": {
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "type": "string"},
                    {"name": "pet", "in": "body", "schema": {"$ref": "#/definitions/Pet"}},
                ],
                "get": {"responses": {}},
                "put": {"parameters": [{"name": "dry", "in": "query", "type": "boolean"}], "responses": {}},
                "post": {
                    "parameters": [{"name": "other", "in": "body", "schema": {"type": "string"}}],
                    "responses": {},
                },
            }
        }
    )
    item = convert_swagger2(document)["paths"]["/pets/{id}"]
    assert item["parameters"] == [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    shared_body = {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
        "x-codegen-request-body-name": "pet",
    }
    assert item["get"] == {"requestBody": shared_body, "responses": {}}
    assert item["put"] == {
        "parameters": [{"name": "dry", "in": "query", "schema": {"type": "boolean"}}],
        "requestBody": shared_body,
        "responses": {},
    }
    # The operation's own body parameter replaces the path-level one.
    assert item["post"]["requestBody"]["content"] == {"application/json": {"schema": {"type": "string"}}}


def test_path_level_form_data_merges_with_the_operation_fields() -> None:
    document = swagger(
        paths={
            "/upload": {
                "parameters": [
                    {"name": "name", "in": "formData", "type": "string"},
                    {"name": "kind", "in": "formData", "type": "string"},
                ],
                "post": {
                    "parameters": [
                        {"name": "kind", "in": "formData", "type": "integer", "required": True},
                        {"name": "file", "in": "formData", "type": "file"},
                    ],
                    "responses": {},
                },
            }
        }
    )
    item = convert_swagger2(document)["paths"]["/upload"]
    assert "parameters" not in item
    assert item["post"]["requestBody"] == {
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "kind": {"type": "integer"},
                        "file": {"type": "string", "format": "binary"},
                    },
                    "required": ["kind"],
                }
            }
        },
        "required": True,
    }


def test_path_parameters_are_always_required() -> None:
    parameter = {"name": "id", "in": "path", "type": "string"}
    assert one_operation({"parameters": [parameter], "responses": {}})["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]


def test_form_field_extensions_x_example_and_x_nullable() -> None:
    parameters = [{"name": "n", "in": "formData", "type": "string", "x-nullable": True, "x-example": "abc"}]
    body = one_operation({"parameters": parameters, "responses": {}})["requestBody"]
    assert body["content"]["application/x-www-form-urlencoded"]["schema"]["properties"] == {
        "n": {"type": "string", "nullable": True, "example": "abc"}
    }


# --------------------------------------------------------------------------- responses


def test_responses() -> None:
    operation = {
        "produces": ["application/json", "application/xml"],
        "responses": {
            200: {
                "description": "The pets",
                "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}},
                "headers": {
                    "X-Rate-Limit": {"type": "integer", "format": "int32", "description": "Calls left"},
                    "X-Tags": {"type": "array", "items": {"type": "string"}, "collectionFormat": "pipes"},
                },
                "examples": {"application/json": [{"name": "Rex"}], "text/csv": "name\nRex\n"},
                "x-vendor": True,
            },
            "404": {"description": "Not found"},
            "default": {"description": "Error", "schema": {"type": "file"}},
            "x-extension": {"kept": True},
        },
    }
    responses = one_operation(operation, produces=["text/plain"])["responses"]
    pets = {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}
    binary = {"type": "string", "format": "binary"}
    assert responses == {
        "200": {
            "description": "The pets",
            "headers": {
                "X-Rate-Limit": {"description": "Calls left", "schema": {"type": "integer", "format": "int32"}},
                "X-Tags": {
                    "description": UNSUPPORTED.format("pipes"),
                    "schema": {"type": "array", "items": {"type": "string"}},
                },
            },
            "content": {
                "application/json": {"schema": pets, "example": [{"name": "Rex"}]},
                "application/xml": {"schema": pets},
                "text/csv": {"schema": pets, "example": "name\nRex\n"},
            },
            "x-vendor": True,
        },
        "404": {"description": "Not found"},
        "default": {
            "description": "Error",
            "content": {"application/json": {"schema": binary}, "application/xml": {"schema": binary}},
        },
        "x-extension": {"kept": True},
    }


def test_response_media_types_come_from_the_document_then_default_to_json() -> None:
    operation = {"responses": {"200": {"description": "ok", "schema": {"type": "string"}}}}
    assert list(one_operation(operation, produces=["text/plain"])["responses"]["200"]["content"]) == ["text/plain"]
    assert list(one_operation(operation)["responses"]["200"]["content"]) == ["application/json"]


def test_operation_fields_are_copied() -> None:
    operation = {
        "tags": ["pets"],
        "summary": "List",
        "description": "Lists pets",
        "externalDocs": {"url": "https://d"},
        "operationId": "listPets",
        "deprecated": True,
        "security": [{"key": ["read"]}],
        "consumes": ["application/json"],
        "produces": ["application/json"],
        "responses": {},
        "x-ratelimit": 5,
    }
    assert one_operation(operation) == {
        "tags": ["pets"],
        "summary": "List",
        "description": "Lists pets",
        "externalDocs": {"url": "https://d"},
        "operationId": "listPets",
        "responses": {},
        "deprecated": True,
        "security": [{"key": ["read"]}],
        "x-ratelimit": 5,
    }


# --------------------------------------------------------------------------- corpus


def corpus_files() -> list[Path]:
    base = corpus_dir()
    if base is None:
        return []
    folder = base / "openapi" / "readme-oas-examples" / "2.0"
    return sorted(p for p in folder.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


def operations_of(paths: dict[str, Any], methods: tuple[str, ...]) -> set[tuple[str, str]]:
    return {
        (path, method) for path, item in paths.items() if isinstance(item, dict) for method in item if method in methods
    }


@pytest.mark.parametrize("path", corpus_files() or [None], ids=lambda p: p.name if p else "missing")
def test_corpus_documents_convert(path: Path | None) -> None:
    if path is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    with path.open(encoding="utf-8") as stream:
        document = json.load(stream) if path.suffix == ".json" else yaml.safe_load(stream)
    assert document["swagger"] == "2.0"
    before = copy.deepcopy(document)

    out = convert_swagger2(document, source=str(path))

    assert document == before
    assert out["openapi"] == "3.0.3"
    stale = [ref for ref in refs(out) if "#/definitions/" in ref or "#/parameters/" in ref or "#/responses/" in ref]
    assert stale == []
    methods = ("get", "put", "post", "delete", "options", "head", "patch")
    assert operations_of(out["paths"], methods) == operations_of(document["paths"], methods)
    assert len(operations_of(out["paths"], methods)) > 0
    json.dumps(out)  # plain JSON data
