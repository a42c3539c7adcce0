"""Every description of the shared corpus imports, with valid and unique tool names and valid schemas."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from apimcp.catalog.naming import VALID_TOOL_NAME
from apimcp.importers.openapi import import_openapi
from apimcp.importers.openapi.loading import DocumentSet, pointer_get
from tests.support.corpus import corpus_dir

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
META_SCHEMA = jsonschema.Draft202012Validator


def _descriptions() -> list[Path]:
    base = corpus_dir()
    if base is None:
        return []
    folder = base / "openapi" / "readme-oas-examples"
    return sorted(p for p in folder.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))


def count_operations(path: Path) -> int:
    """Operations as the description states them, following path-item references."""
    documents = DocumentSet(str(path))
    count = 0
    for raw_item in (documents.main().get("paths") or {}).values():
        item, uri = raw_item, documents.main_uri
        while isinstance(item, dict) and isinstance(item.get("$ref"), str):
            file_part, _, fragment = item["$ref"].partition("#")
            uri = documents.absolute(uri, file_part)
            item = pointer_get(documents.document(uri), fragment, uri)
        if isinstance(item, dict):
            count += sum(1 for method in METHODS if isinstance(item.get(method), dict))
    return count


def check_service(path: Path) -> None:
    service = import_openapi(str(path))
    names = [op.tool_name for op in service.operations]
    assert len(names) == len(set(names)), "tool names must be unique"
    bad = [n for n in names if not VALID_TOOL_NAME.match(n)]
    assert not bad, f"invalid tool names: {bad}"
    assert len(service.operations) == count_operations(path)
    for operation in service.operations:
        META_SCHEMA.check_schema(operation.input_schema)
        jsonschema_rs.Draft202012Validator(dict(operation.input_schema))  # what the gateway compiles, regexes too
        assert operation.input_schema["type"] == "object"
        if operation.output_schema is not None:
            META_SCHEMA.check_schema(operation.output_schema)
            jsonschema_rs.Draft202012Validator(dict(operation.output_schema))
            assert operation.output_schema["type"] == "object"


@pytest.mark.parametrize(
    "path", _descriptions() or [None], ids=lambda p: f"{p.parent.parent.name}/{p.name}" if p else "missing"
)
def test_readme_examples_import(path: Path | None) -> None:
    if path is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    check_service(path)


def test_github_imports_completely() -> None:
    base = corpus_dir()
    if base is None:
        pytest.skip("the API corpus is not here: set APIMCP_CORPUS to its folder (shared/corpus)")
    path = base / "openapi" / "github" / "api.github.com.json"
    started = time.process_time()  # CPU time, which a busy machine does not stretch as it does wall time
    check_service(path)
    # timing-ok: a guard against pathological slowness, not a benchmark: about 20 s of CPU, mostly checking schemas
    assert time.process_time() - started < 300


def test_every_schema_keyword_survives(tmp_path: Path) -> None:
    spec: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Kinds", "version": "1"},
        "paths": {
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
                    },
                    "responses": {"201": {"description": "ok"}},
                }
            }
        },
        "components": {
            "schemas": {
                "Pet": {
                    "type": "object",
                    "discriminator": {"propertyName": "kind", "mapping": {"cat": "#/components/schemas/Cat"}},
                    "required": ["kind", "id"],
                    "properties": {
                        "id": {"type": "integer", "readOnly": True},
                        "kind": {"type": "string", "enum": ["cat", "dog"], "default": "cat", "example": "dog"},
                        "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "format": "int32"},
                        "owner": {"nullable": True, "allOf": [{"$ref": "#/components/schemas/Owner"}]},
                        "detail": {"oneOf": [{"$ref": "#/components/schemas/Cat"}, {"type": "string"}]},
                    },
                },
                "Cat": {"type": "object", "properties": {"lives": {"type": "integer", "maximum": 9}}},
                "Owner": {"type": "object", "properties": {"name": {"type": "string", "nullable": True}}},
            }
        },
    }
    path = tmp_path / "kinds.json"
    path.write_text(json.dumps(spec))
    schema = import_openapi(str(path)).operations[0].input_schema
    properties = schema["properties"]
    assert "id" not in properties and schema["required"] == ["kind"]  # readOnly left the input
    assert properties["kind"] == {"type": "string", "enum": ["cat", "dog"], "default": "cat", "examples": ["dog"]}
    assert properties["age"] == {"type": "integer", "exclusiveMinimum": 0, "format": "int32"}
    assert properties["owner"] == {"anyOf": [{"allOf": [{"$ref": "#/$defs/Owner"}]}, {"type": "null"}]}
    assert properties["detail"] == {"oneOf": [{"$ref": "#/$defs/Cat"}, {"type": "string"}]}
    assert schema["$defs"]["Owner"]["properties"]["name"]["type"] == ["string", "null"]
    assert set(schema["$defs"]) == {"Cat", "Owner"}
    META_SCHEMA.check_schema(schema)
