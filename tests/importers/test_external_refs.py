"""Uploaded descriptions may not reference other documents; descriptions read from files and URLs still may."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi
from apimcp.importers.openapi.loading import DocumentSet
from tests.support.fetching import loopback_fetcher
from tests.support.live_aiohttp import live_aiohttp

TAG = {"type": "string", "enum": ["cat", "dog"]}


def description(tag_ref: str = "#/components/schemas/Tag") -> dict[str, Any]:
    """Pets, where the `tag` property is a `$ref` (internal by default)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": "https://pets.example.com"}],
        "paths": {
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                    "responses": {"200": {"$ref": "#/components/responses/Pet"}},
                },
                "get": {
                    "operationId": "listPets",
                    "parameters": [{"$ref": "#/components/parameters/Limit"}],
                    "responses": {"200": {"description": "ok"}},
                },
            }
        },
        "components": {
            "schemas": {
                "Pet": {"type": "object", "properties": {"name": {"type": "string"}, "tag": {"$ref": tag_ref}}},
                "Tag": TAG,
            },
            "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}},
            "responses": {
                "Pet": {
                    "description": "the pet",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
                }
            },
        },
    }


def tag_of(service: Any) -> Any:
    add = service.operation("add_pet")
    assert add is not None
    schema = add.input_schema
    tag = schema["properties"]["tag"]
    if "$ref" in tag:
        tag = schema["$defs"][tag["$ref"].removeprefix("#/$defs/")]
    return tag


def test_an_upload_with_internal_references_imports() -> None:
    service = import_openapi("pets.yaml", document=description(), external_references=False)
    assert sorted(op.tool_name for op in service.operations) == ["add_pet", "list_pets"]
    assert tag_of(service) == TAG
    list_pets = service.operation("list_pets")
    assert list_pets is not None and list_pets.binding.parameters[0].name == "limit"  # a referenced parameter
    add = service.operation("add_pet")
    assert add is not None and add.output_schema is not None  # a referenced response
    assert add.output_schema["properties"]["name"] == {"type": "string"}
    assert service.source == "pets.yaml"


def test_a_file_reference_in_an_upload_is_refused_without_reading_it(tmp_path: Path) -> None:
    """Even when the named file exists next to where the upload claims to come from."""
    (tmp_path / "common.yaml").write_text("Tag: {type: string}\n")
    source = str(tmp_path / "pets.yaml")
    with pytest.raises(SpecError) as caught:
        import_openapi(source, document=description("common.yaml#/Tag"), external_references=False)
    assert caught.value.message == (
        "it references another document ('common.yaml'); import it from a URL or a file instead"
    )
    assert str(caught.value).startswith(f"{source}: it references another document")


@pytest.mark.parametrize(
    "place_reference",
    [
        lambda d, ref: d["components"]["schemas"]["Pet"]["properties"].update(tag={"$ref": ref}),
        lambda d, ref: d["paths"].update({"/other": {"$ref": ref}}),
        lambda d, ref: d["paths"]["/pets"]["get"]["parameters"].append({"$ref": ref}),
        lambda d, ref: d["paths"]["/pets"]["get"]["responses"].update({"200": {"$ref": ref}}),
        lambda d, ref: d["paths"]["/pets"]["post"].update(requestBody={"$ref": ref}),
    ],
    ids=["schema", "path-item", "parameter", "response", "request-body"],
)
def test_other_documents_are_refused_wherever_referenced(place_reference: Any) -> None:
    document = copy.deepcopy(description())
    place_reference(document, "shared.yaml#/Thing")
    with pytest.raises(SpecError, match=r"it references another document \('shared\.yaml'\)"):
        import_openapi("upload", document=document, external_references=False)


def test_a_url_reference_in_an_upload_is_refused_without_fetching_it() -> None:
    hits: list[str] = []

    async def tag(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.json_response({"Tag": TAG})

    def make_app() -> web.Application:
        app = web.Application()
        app.router.add_get("/common.json", tag)
        return app

    with live_aiohttp(make_app) as url:
        document = description(f"{url}/common.json#/Tag")
        with pytest.raises(SpecError) as caught:
            import_openapi("upload", document=document, external_references=False)
        assert caught.value.message.startswith(f"it references another document ('{url}/common.json')")
        assert hits == []
        # The same description read from a file may reference the URL.
        assert tag_of(import_openapi("upload", document=document, fetcher=loopback_fetcher())) == TAG
        assert hits == ["/common.json"]


def test_a_swagger_2_upload_with_a_file_reference_is_refused() -> None:
    document = {
        "swagger": "2.0",
        "info": {"title": "Pets", "version": "1"},
        "host": "pets.example.com",
        "paths": {
            "/pets": {
                "post": {
                    "operationId": "addPet",
                    "parameters": [{"in": "body", "name": "pet", "schema": {"$ref": "definitions.json#/Pet"}}],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    with pytest.raises(SpecError, match=r"it references another document \('definitions\.json'\)"):
        import_openapi("pets.json", document=document, external_references=False)
    internal = copy.deepcopy(document)
    internal["paths"]["/pets"]["post"]["parameters"][0]["schema"] = {"$ref": "#/definitions/Pet"}
    internal["definitions"] = {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}
    service = import_openapi("pets.json", document=internal, external_references=False)
    [operation] = service.operations
    assert operation.input_schema["properties"]["name"] == {"type": "string"}


def test_file_references_resolve_by_default(tmp_path: Path) -> None:
    (tmp_path / "common.yaml").write_text("Tag:\n  type: string\n  enum: [cat, dog]\n")
    main = tmp_path / "pets.json"
    main.write_text(json.dumps(description("common.yaml#/Tag")))
    assert tag_of(import_openapi(str(main))) == TAG
    assert tag_of(import_openapi(str(main), external_references=True)) == TAG
    # Handed over already parsed, a description anchored at a file still reaches its neighbours.
    assert tag_of(import_openapi(str(main), document=description("common.yaml#/Tag"))) == TAG


def test_document_set_without_external_documents() -> None:
    documents = DocumentSet("upload.yaml", main_document={"openapi": "3.0.3"}, external=False)
    assert documents.main_uri == "upload.yaml"  # a name, not resolved against the working directory
    assert documents.main() == {"openapi": "3.0.3"}
    assert documents.absolute("upload.yaml", "") == "upload.yaml"
    with pytest.raises(SpecError, match="references another document"):
        documents.absolute("upload.yaml", "other.yaml")
    opened = DocumentSet("upload.yaml", main_document={}, external=True)
    assert opened.main_uri == str(Path("upload.yaml").resolve())
    assert opened.absolute(opened.main_uri, "other.yaml") == str(Path("other.yaml").resolve())
