"""What an OpenAPI import does with what a description gets wrong or says beyond flat arguments: repaired
when the intent is unambiguous, else left out, always told as a warning naming the operation and the
JSON pointer; tool schemas always valid 2020-12 that the gateway's validator compiles."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from apimcp.catalog.codec import decode_service, encode_service
from apimcp.catalog.model import RestBinding, Service
from apimcp.importers.openapi import SchemaLimits, import_openapi
from apimcp.importers.openapi.warnings import WarningLog

OK = {"description": "ok"}


def describe(tmp_path: Path, document: dict[str, Any], name: str = "spec.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def one_operation(
    *,
    parameters: list[Any] | None = None,
    body: Any = None,
    responses: dict[str, Any] | None = None,
    schemas: dict[str, Any] | None = None,
    method: str = "post",
) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": "act", "responses": responses or {"200": OK}}
    if parameters is not None:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {"/x": {method: operation}},
    }
    if schemas:
        document["components"] = {"schemas": schemas}
    return document


def imported(tmp_path: Path, document: dict[str, Any], *, parsed: bool = False, **options: Any) -> Service:
    """The service of a description, checked: schemas valid and compiling, the service encodable. `parsed`
    hands the document over as is (for nesting deeper than a JSON parser would read)."""
    if parsed:
        service = import_openapi(str(tmp_path / "deep.json"), document=document, **options)
    else:
        service = import_openapi(str(describe(tmp_path, document)), **options)
    for operation in service.operations:
        for schema in (operation.input_schema, operation.output_schema):
            if schema is not None:
                jsonschema.Draft202012Validator.check_schema(schema)
                jsonschema_rs.Draft202012Validator(dict(schema))
    assert decode_service(encode_service(service)) == service  # warnings survive, nothing breaks encoding
    return service


def warnings_of(service: Service) -> list[str]:
    return [str(warning) for warning in service.warnings]


def query(schema: Any) -> list[dict[str, Any]]:
    return [{"name": "q", "in": "query", "schema": schema}]


# --- keyword values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "kept", "outcome"),
    [
        ({"type": "string", "pattern": 0}, {"type": "string"}, "dropped"),
        ({"type": "string", "pattern": "[a-z"}, {"type": "string"}, "dropped"),  # does not compile
        ({"type": "string", "minLength": "5"}, {"type": "string", "minLength": 5}, "read as 5"),
        ({"type": "number", "maximum": "1.5"}, {"type": "number", "maximum": 1.5}, "read as 1.5"),
        ({"type": "int"}, {"type": "integer"}, 'read as "integer"'),
        ({"type": ["String", "null"]}, {"type": ["string", "null"]}, 'read as ["string","null"]'),
        ({"type": "date"}, {}, "dropped"),
        ({"type": "array", "uniqueItems": "true"}, {"type": "array", "uniqueItems": True}, "read as true"),
        ({"type": "array", "uniqueItems": 1}, {"type": "array"}, "dropped"),  # 1 == True, yet not a boolean
        ({"type": "string", "enum": "a,b"}, {"type": "string"}, "dropped"),
        ({"type": "string", "description": 7}, {"type": "string"}, "dropped"),
        ({"type": "string", "$dynamicRef": "#meta"}, {"type": "string"}, "dropped"),
    ],
)
def test_an_invalid_keyword_value_is_repaired_when_unambiguous_else_dropped(
    tmp_path: Path, written: dict[str, Any], kept: dict[str, Any], outcome: str
) -> None:
    service = imported(tmp_path, one_operation(parameters=query(written), method="get"))
    assert service.operations[0].input_schema["properties"]["q"] == kept
    (warning,) = warnings_of(service)
    assert warning.startswith("GET /x: /paths/~1x/get/parameters/0/schema/")
    assert warning.endswith(outcome)


def test_subschemas_that_are_no_schemas_are_left_out(tmp_path: Path) -> None:
    body = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": "string"},
            "mixed": {"anyOf": [{"type": "string"}, 5], "allOf": []},
            "one": {"allOf": {"type": "integer"}},
            "odd": "text",
        },
        "additionalProperties": "no",
    }
    service = imported(tmp_path, one_operation(body=body))
    properties = service.operations[0].input_schema["properties"]
    assert properties["tags"] == {"type": "array"}
    assert properties["mixed"] == {"anyOf": [{"type": "string"}]}
    assert properties["one"] == {"allOf": [{"type": "integer"}]}
    assert properties["odd"] == {}
    found = warnings_of(service)
    at = "POST /x: /paths/~1x/post/requestBody/content/application~1json/schema"
    assert f'{at}/properties/tags/items: "string" is not a schema (an object or a boolean); dropped' in found
    assert f"{at}/properties/mixed/anyOf/1: 5 is not a schema (an object or a boolean); dropped" in found
    assert f"{at}/properties/mixed/allOf: `allOf` must hold at least one schema; dropped" in found
    assert any(w.startswith(f"{at}/properties/one/allOf: `allOf` must be a list") for w in found)
    assert any(w.startswith(f'{at}/properties/odd: "text" is not a schema') for w in found)
    assert any(w.startswith(f'{at}/additionalProperties: "no" is not a schema') for w in found)


def test_required_true_on_a_property_joins_the_objects_required_list(tmp_path: Path) -> None:
    body = {
        "type": "object",
        "properties": {"a": {"type": "string", "required": True}, "b": {"type": "string", "required": False}},
        "required": ["c", "c", 3],
    }
    service = imported(tmp_path, one_operation(body=body))
    schema = service.operations[0].input_schema
    assert schema["required"] == ["c", "a"]
    assert set(schema["properties"]) == {"a", "b", "c"}  # c: required but undescribed, offered anyway
    assert schema["properties"]["a"] == {"type": "string"}
    assert len(warnings_of(service)) == 4  # a lifted, b dropped, the list repaired, c offered


def test_pattern_property_names_that_do_not_compile_are_dropped(tmp_path: Path) -> None:
    schema = {"type": "object", "patternProperties": {"^x-": {"type": "string"}, "[": {"type": "integer"}}}
    service = imported(tmp_path, one_operation(parameters=query(schema), method="get"))
    assert service.operations[0].input_schema["properties"]["q"]["patternProperties"] == {"^x-": {"type": "string"}}
    assert "does not compile" in warnings_of(service)[0]


def test_draft_7_dependencies_become_their_2020_12_keywords(tmp_path: Path) -> None:
    body = {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "dependencies": {"card": ["billing"], "billing": {"required": ["card"]}},
    }
    service = imported(tmp_path, one_operation(body=body))
    schema = service.operations[0].input_schema["properties"]["body"]
    assert schema["dependentRequired"] == {"card": ["billing"]}
    assert schema["dependentSchemas"] == {"billing": {"required": ["card"]}}
    assert "dependencies" not in schema


def test_a_parameter_example_nested_too_deep_is_dropped(tmp_path: Path) -> None:
    deep: Any = "bottom"
    for _ in range(40):
        deep = [deep]
    parameters = [{"name": "q", "in": "query", "schema": {"type": "array"}, "example": deep}]
    service = imported(tmp_path, one_operation(parameters=parameters, method="get"))
    assert "examples" not in service.operations[0].input_schema["properties"]["q"]
    assert warnings_of(service) == [
        "GET /x: /paths/~1x/get/parameters/0/example: `examples` nests more than 32 levels of arrays and objects; "
        "dropped"
    ]


# --- depth ------------------------------------------------------------------------------------


def test_a_schema_nested_thousands_deep_imports_bounded_without_recursion_error(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"next": deep}}
    limit = sys.getrecursionlimit()
    service = imported(tmp_path, one_operation(body=deep), parsed=True)
    assert sys.getrecursionlimit() == limit
    (warning,) = warnings_of(service)
    assert "schemas nest more than 64 levels deep here; any value is accepted from this level down" in warning
    schema = service.operations[0].input_schema
    levels = 0
    while isinstance(schema.get("properties", {}).get("next"), dict):
        schema, levels = schema["properties"]["next"], levels + 1
    assert (levels, schema) == (65, {})  # the body at depth 0, 64 levels below it, then anything


def test_a_chain_of_thousands_of_references_imports_without_recursion_error(tmp_path: Path) -> None:
    schemas = {f"S{i}": {"type": "object", "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}}}
               for i in range(3000)}  # fmt: skip
    schemas["S3000"] = {"type": "string"}
    service = imported(tmp_path, one_operation(body={"$ref": "#/components/schemas/S0"}, schemas=schemas), parsed=True)
    assert len(service.operations[0].input_schema["$defs"]) == 3000  # S1..S3000; S0 is the body itself
    assert service.warnings == ()


def test_a_deep_swagger_2_schema_converts_without_recursion_error(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"next": deep}}
    document = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "1"},
        "paths": {"/x": {"post": {"parameters": [{"in": "body", "name": "b", "schema": deep}], "responses": {}}}},
    }
    service = imported(tmp_path, document, parsed=True)
    assert "nest more than 64 levels" in warnings_of(service)[0]


def test_schema_limits_are_settable_and_checked(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        deep = {"type": "object", "properties": {"next": deep}}
    service = imported(tmp_path, one_operation(body=deep), schema_limits=SchemaLimits(max_depth=4))
    assert "nest more than 4 levels" in warnings_of(service)[0]
    with pytest.raises(ValueError, match="within 224"):
        SchemaLimits(max_depth=120, max_value_depth=32)


def test_warnings_are_bounded(tmp_path: Path) -> None:
    properties = {f"p{i}": {"type": "string", "pattern": i} for i in range(30)}
    log_limit = 10
    document = one_operation(body={"type": "object", "properties": properties})
    path = describe(tmp_path, document)
    log = WarningLog(str(path.resolve()), max_warnings=log_limit)
    for i in range(30):
        log.add(str(path.resolve()), f"/p{i}", "wrong")
    warnings = log.warnings()
    assert len(warnings) == log_limit + 1
    assert str(warnings[-1]) == "/: 20 more warnings were left out (at most 10 are kept)"
    assert len(imported(tmp_path, document).warnings) == 30


# --- bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "constraint",
    [
        {"minProperties": 1},
        {"maxProperties": 1},
        {"dependentRequired": {"a": ["b"]}},
        {"patternProperties": {"^x": {"type": "string"}}},
        {"propertyNames": {"maxLength": 3}},
        {"if": {"required": ["a"]}, "then": {"required": ["b"]}},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_body_whose_object_keywords_flattening_would_lose_stays_one_argument(
    tmp_path: Path, constraint: dict[str, Any]
) -> None:
    body = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, **constraint}
    service = imported(tmp_path, one_operation(body=body, parameters=query({"type": "string"})))
    operation = service.operations[0]
    schema = operation.input_schema
    assert set(schema["properties"]) == {"body", "q"}
    assert schema["required"] == ["body"]
    for keyword, value in constraint.items():
        assert schema["properties"]["body"][keyword] == value
    assert isinstance(operation.binding, RestBinding) and operation.binding.body is not None
    assert operation.binding.body.argument == "body"


def test_a_referenced_body_with_an_object_keyword_beside_the_reference_stays_whole(tmp_path: Path) -> None:
    schemas = {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}
    body = {"$ref": "#/components/schemas/Pet", "minProperties": 1}
    service = imported(tmp_path, one_operation(body=body, schemas=schemas))
    assert set(service.operations[0].input_schema["properties"]) == {"body"}


def test_a_plain_object_body_is_still_flattened_and_its_additional_properties_schema_kept(tmp_path: Path) -> None:
    body = {
        "type": "object",
        "description": "a pet",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": {"type": "integer"},
    }
    service = imported(tmp_path, one_operation(body=body, parameters=query({"type": "string"})))
    schema = service.operations[0].input_schema
    assert set(schema["properties"]) == {"name", "q"}
    assert schema["additionalProperties"] == {"type": "integer"}  # extra fields still checked
    closed = imported(tmp_path, one_operation(body={"type": "object", "properties": {"n": {"type": "string"}}}))
    assert closed.operations[0].input_schema["additionalProperties"] is False


# --- output schemas ---------------------------------------------------------------------------


def json_answer(schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": "ok", "content": {"application/json": {"schema": schema}}}


PET = {"type": "object", "properties": {"name": {"type": "string"}}}
JOB = {"type": "object", "properties": {"job": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("responses", "method", "expected"),
    [
        ({"200": json_answer(PET)}, "get", PET),
        ({"200": json_answer(PET), "201": json_answer(PET)}, "post", PET),
        ({"200": json_answer(PET), "202": json_answer(JOB)}, "post", {"type": "object", "anyOf": [PET, JOB]}),
        ({"200": json_answer(PET), "204": {"description": "none"}}, "post", None),
        ({"200": json_answer(PET), "201": {"description": "created, nothing said"}}, "post", None),
        ({"205": json_answer(PET)}, "post", None),
        ({"200": json_answer(PET)}, "head", None),
        ({"200": json_answer({"type": "array"})}, "get", None),
        ({"200": {"description": "ok", "content": {"application/json": {"schema": PET}, "text/csv": {}}}}, "get", None),
    ],
    ids=["one", "same twice", "two shapes", "or 204", "or no content", "205", "head", "array", "or csv"],
)
def test_an_output_schema_promises_only_what_every_success_delivers(
    tmp_path: Path, responses: dict[str, Any], method: str, expected: dict[str, Any] | None
) -> None:
    service = imported(tmp_path, one_operation(responses=responses, method=method))
    assert service.operations[0].output_schema == expected


def test_a_204_declaring_content_is_told(tmp_path: Path) -> None:
    service = imported(tmp_path, one_operation(responses={"204": json_answer(PET)}))
    assert warnings_of(service) == [
        "POST /x: /paths/~1x/post/responses/204/content: a 204 response has no body; the content it declares is ignored"
    ]


# --- Swagger 2.0 tuple items ------------------------------------------------------------------


def test_swagger_tuple_items_of_several_schemas_become_prefix_items(tmp_path: Path) -> None:
    document = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/x": {
                "get": {
                    "responses": {
                        "200": {
                            "description": "ok",
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "pair": {
                                        "type": "array",
                                        "items": [{"$ref": "#/definitions/A"}, {"type": "integer"}],
                                    }
                                },
                            },
                        }
                    },
                    "parameters": [
                        {"in": "query", "name": "ids", "type": "array", "items": [{"type": "integer"}]},
                    ],
                }
            }
        },
        "definitions": {"A": {"type": "string"}},
    }
    service = imported(tmp_path, document)
    operation = service.operations[0]
    assert operation.output_schema is not None
    assert operation.output_schema["properties"]["pair"]["prefixItems"] == [{"$ref": "#/$defs/A"}, {"type": "integer"}]
    assert operation.input_schema["properties"]["ids"]["items"] == {"type": "integer"}
    assert warnings_of(service) == [
        "GET /x: /paths/~1x/get/parameters/0/items: `items` is a list (the tuple form of older JSON Schema drafts); "
        "its one schema is read as the schema of every item",
        "GET /x: /paths/~1x/get/responses/200/schema/properties/pair/items: `items` is a list (the tuple form of "
        "older JSON Schema drafts); read as `prefixItems`",
    ]


def test_tuple_items_in_an_openapi_3_description_are_repaired_too(tmp_path: Path) -> None:
    schema = {"type": "array", "items": [{"type": "string"}]}
    service = imported(tmp_path, one_operation(parameters=query(schema), method="get"))
    assert service.operations[0].input_schema["properties"]["q"] == {"type": "array", "items": {"type": "string"}}
    assert "its one schema is read as the schema of every item" in warnings_of(service)[0]
