"""Reading descriptions: files, URLs, YAML quirks, limits, and references across documents."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import import_openapi
from apimcp.importers.openapi.loading import DocumentSet, fetch, parse
from apimcp.safety.fetch import FetchLimits
from tests.support.fetching import loopback_fetcher
from tests.support.live_aiohttp import live_aiohttp

PET = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"type": "string"}, "tag": {"$ref": "common.yaml#/Tag"}},
}
MAIN = {
    "openapi": "3.1.0",
    "info": {"title": "Split", "version": "1"},
    "paths": {
        "/pets": {
            "post": {
                "operationId": "addPet",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "schemas/pet.json"}}},
                },
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/pets/{id}": {"$ref": "paths/pet-by-id.yaml"},
    },
}
PATH_ITEM = """
get:
  operationId: getPet
  parameters:
    - {name: id, in: path, required: true, schema: {type: integer}}
  responses:
    "200":
      description: a pet
      content:
        application/json:
          schema: {$ref: "../schemas/pet.json"}
"""
COMMON = "Tag:\n  type: string\n  examples: [2024-01-01]\n"


def write_split(root: Path) -> Path:
    (root / "schemas").mkdir()
    (root / "paths").mkdir()
    (root / "schemas" / "pet.json").write_text(json.dumps(PET))
    (root / "schemas" / "common.yaml").write_text(COMMON)
    (root / "paths" / "pet-by-id.yaml").write_text(PATH_ITEM)
    main = root / "main.json"
    main.write_text(json.dumps(MAIN))
    return main


def test_relative_references_across_files(tmp_path: Path) -> None:
    service = import_openapi(str(write_split(tmp_path)))
    add, get = service.operations
    assert add.tool_name == "add_pet" and get.tool_name == "get_pet"
    assert add.input_schema["properties"]["tag"] == {"$ref": "#/$defs/Tag"}
    assert add.input_schema["$defs"]["Tag"] == {"type": "string", "examples": ["2024-01-01"]}  # dates stay text
    assert get.output_schema is not None and get.output_schema["required"] == ["name"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    write_split(tmp_path)
    (tmp_path / "evil.json").write_text(json.dumps({**MAIN, "paths": {"/x": {"$ref": "/etc/passwd"}}}))

    def make() -> web.Application:
        app = web.Application()
        app.router.add_static("/", tmp_path)
        return app

    with live_aiohttp(make) as url:
        yield url


def test_descriptions_from_urls_with_relative_references(served: str) -> None:
    service = import_openapi(f"{served}/main.json", fetcher=loopback_fetcher())
    assert [op.tool_name for op in service.operations] == ["add_pet", "get_pet"]
    assert service.source == f"{served}/main.json"


def test_a_remote_description_cannot_read_local_files(served: str) -> None:
    with pytest.raises(SpecError, match="could not fetch"):
        # /etc/passwd is resolved against the URL, never read locally
        import_openapi(f"{served}/evil.json", fetcher=loopback_fetcher())


def test_fetch_limits(served: str, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="larger than the 10 bytes allowed"):
        fetch(f"{served}/main.json", loopback_fetcher(FetchLimits(max_bytes=10)))
    with pytest.raises(SpecError, match="HTTP 404"):
        fetch(f"{served}/missing.json", loopback_fetcher())
    with pytest.raises(SpecError, match="only local files and http"):
        fetch("ftp://example.com/spec.yaml", loopback_fetcher())
    with pytest.raises(SpecError, match="only local files and http"):
        fetch("file:///etc/passwd", loopback_fetcher())
    with pytest.raises(SpecError, match="could not fetch"):
        fetch("http://127.0.0.1:1/spec.json", loopback_fetcher(FetchLimits(timeout_seconds=2)))


def test_parse_errors_name_the_line() -> None:
    with pytest.raises(SpecError, match=r"spec.yaml: not valid JSON or YAML \(line 3, column 1\)"):
        parse(b"openapi: 3.0.0\ninfo: [unclosed\n", "spec.yaml")


def test_not_openapi(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": "world"}')
    with pytest.raises(SpecError, match=r'"openapi" must name version 3\.x'):
        import_openapi(str(path))
    path.write_text('{"openapi": "3.0.0", "info": {"version": "1"}, "paths": {}}')
    with pytest.raises(SpecError, match=r"info\.title"):
        import_openapi(str(path))
    assert import_openapi(str(path), name="Named").name == "Named"


def test_broken_references_are_named(tmp_path: Path) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "Broken", "version": "1"},
        "paths": {
            "/x": {
                "get": {
                    "parameters": [{"name": "q", "in": "query", "schema": {"$ref": "#/components/schemas/Nope"}}],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(SpecError, match="'/components/schemas/Nope' does not exist"):
        import_openapi(str(path))


def test_documents_are_read_once(tmp_path: Path) -> None:
    documents = DocumentSet(str(write_split(tmp_path)))
    first = documents.document(str(tmp_path / "schemas" / "pet.json"))
    assert documents.document(str(tmp_path / "schemas" / "pet.json")) is first
