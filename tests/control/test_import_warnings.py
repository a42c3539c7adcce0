"""The import answer tells what the importer repaired or left out of a description."""

from __future__ import annotations

from tests.control.api_harness import Api, created, import_echo

SLOPPY = b"""
openapi: 3.0.3
info: {title: Sloppy, version: "1"}
servers: [{url: "https://sloppy.example.com"}]
paths:
  /pets:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: string, pattern: 0}}
      responses: {"200": {description: ok}}
"""


def test_the_import_answer_carries_the_description_warnings(api: Api) -> None:
    acme = api.org("acme")
    service = created(acme.user.post("/services", files={"file": ("sloppy.yaml", SLOPPY, "application/yaml")}))
    assert service["operation_count"] == 1
    assert service["warnings"] == [
        "GET /pets: /paths/~1pets/get/parameters/0/schema/pattern: `pattern: 0` is not valid JSON Schema (0 is not "
        'of type "string"); dropped'
    ]
    assert import_echo(acme.user)["warnings"] == []
