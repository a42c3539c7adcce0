"""What one OpenAPI import may cost the process that runs it: the keyword-check cache holds only short
values, whatever an import carries; naming definitions stays linear; an import has a CPU-time budget;
and no keyword value makes the importer fail with anything but a SpecError."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.importers.errors import SpecError
from apimcp.importers.openapi import SchemaLimits, import_openapi, keywords
from apimcp.importers.openapi.schemas import SchemaConverter
from apimcp.settings import from_environment

OK = {"description": "ok"}


def with_body(body: Any, schemas: dict[str, Any] | None = None) -> dict[str, Any]:
    operation = {"requestBody": {"content": {"application/json": {"schema": body}}}, "responses": {"200": OK}}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {"/x": {"post": operation}},
    }
    if schemas is not None:
        document["components"] = {"schemas": schemas}
    return document


def same_named_references(count: int) -> dict[str, Any]:
    """`count` references to distinct schemas whose pointers all end in `item`: each needs a name of its own."""
    schemas = {f"S{i}": {"type": "object", "properties": {"item": {"type": "string"}}} for i in range(count)}
    properties = {f"p{i}": {"$ref": f"#/components/schemas/S{i}/properties/item"} for i in range(count)}
    return with_body({"type": "object", "properties": properties}, schemas)


# --- finding: the keyword-check cache grew with every large distinct value, for the life of the process ------------


def test_keyword_cache_never_holds_annotations_or_large_values() -> None:
    keywords._cached_problem.cache_clear()
    for round_ in range(5):
        schemas = {}
        for i in range(10):
            large = f"{round_}.{i} " + "x" * (256 * 1024)  # distinct in every import, as a hostile user makes them
            schemas[f"S{i}"] = {
                "type": "object",
                "title": large,
                "description": large,
                "default": large,
                "$comment": large,
                "properties": {"name": {"type": "string", "const": large, "pattern": large, "x-note": large}},
            }
        service = import_openapi("mem.json", document=with_body({"$ref": "#/components/schemas/S0"}, schemas))
        assert service.operations
    # What recurs is cached (`type: object`, `type: string`); nothing a large or annotation value made.
    assert keywords._cached_problem.cache_info().currsize <= 4
    assert keywords._cached_problem.cache_info().maxsize == 4096


def test_keyword_cache_keeps_short_values_and_checks_long_ones_alike() -> None:
    keywords._cached_problem.cache_clear()
    assert keywords.problem("pattern", "[a-z]+") is None
    assert keywords.problem("pattern", "[a-z]" * 100) is None  # 500 characters: checked, not cached
    assert keywords.problem("pattern", "[a-z" * 100) is not None
    assert keywords.problem("description", "short") is None
    assert keywords.problem("minLength", 1) is None
    assert keywords.problem("uniqueItems", 1) is not None  # 1 == True, yet cached apart from True
    assert keywords.problem("uniqueItems", True) is None
    assert keywords._cached_problem.cache_info().currsize == 4


# --- finding: `required` entries that cannot be hashed raised TypeError out of the import -------------------------


@pytest.mark.parametrize("written", [[[1]], [{}], ["name", {}, ["x"]]])
def test_required_entries_that_are_not_strings_are_dropped_with_a_warning(written: list[Any]) -> None:
    body = {"type": "object", "required": written, "properties": {"name": {"type": "string", "readOnly": True}}}
    service = import_openapi("mem.json", document=with_body(body))
    assert "required" not in service.operations[0].input_schema  # `name` is read-only: gone from the input
    (warning,) = service.warnings
    assert warning.location.endswith("/schema/required")
    assert "is not valid JSON Schema" in warning.problem


# --- finding: naming definitions was quadratic in the references sharing a last segment ---------------------------


class CountedNames(set[str]):
    """The names a converter has given, counting how often one is looked up."""

    lookups = 0

    def __contains__(self, name: object) -> bool:
        CountedNames.lookups += 1
        return super().__contains__(name)


def test_thousands_of_same_named_references_are_named_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each name used to walk item_2 … item_n: 32 million lookups (3.7 s) for 8,000 references."""
    made = SchemaConverter.__init__

    def counting(self: SchemaConverter, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        self._used_names = CountedNames()

    monkeypatch.setattr(SchemaConverter, "__init__", counting)
    CountedNames.lookups = 0
    service = import_openapi("mem.json", document=same_named_references(8000))
    assert CountedNames.lookups < 3 * 8000
    definitions = service.operations[0].input_schema["$defs"]
    assert len(definitions) == 8000
    assert {"item", "item_2", "item_8000"} <= set(definitions)


def test_a_name_written_in_the_description_is_never_given_twice() -> None:
    item = {"properties": {"item": {"type": "string"}}}
    schemas = {"item_2": {"type": "integer"}, "A": item, "B": item, "C": item}
    properties = {
        "a": {"$ref": "#/components/schemas/A/properties/item"},
        "z": {"$ref": "#/components/schemas/item_2"},
        "b": {"$ref": "#/components/schemas/B/properties/item"},
        "c": {"$ref": "#/components/schemas/C/properties/item"},
    }
    service = import_openapi("mem.json", document=with_body({"type": "object", "properties": properties}, schemas))
    schema = service.operations[0].input_schema
    refs = {name: schema["properties"][name]["$ref"].removeprefix("#/$defs/") for name in properties}
    assert refs == {"a": "item", "z": "item_2", "b": "item_3", "c": "item_4"}


# --- finding: an import had no CPU-time budget --------------------------------------------------------------------


def test_an_import_past_its_cpu_budget_stops_naming_the_limit() -> None:
    document = same_named_references(8000)  # one operation: the budget is checked within its conversion
    with pytest.raises(SpecError, match=r"more than the 0\.01 s of CPU time allowed .*APIMCP_SCHEMA_MAX_CPU_SECONDS"):
        import_openapi("mem.json", document=document, schema_limits=SchemaLimits(max_cpu_seconds=0.01))


def test_the_cpu_budget_is_a_setting() -> None:
    assert SchemaLimits().max_cpu_seconds == 60.0
    assert from_environment({"APIMCP_SCHEMA_MAX_CPU_SECONDS": "5"}).schema.max_cpu_seconds == 5.0
    with pytest.raises(ValueError, match="max_cpu_seconds must be positive"):
        SchemaLimits(max_cpu_seconds=0)


# --- finding: one large definition every operation reaches multiplied the service ---------------------------------


def _shared_definition(operations: int, values: int) -> dict[str, Any]:
    large = {"type": "string", "enum": [f"value-{n}" for n in range(values)]}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": {
        "kind": {"$ref": "#/components/schemas/Kind"}, "other": {"$ref": "#/components/schemas/Kind"}}}}}}  # fmt: skip
    ok = {"200": {"description": "ok"}}
    paths = {f"/things{n}": {"post": {"operationId": f"post{n}", "requestBody": body, "responses": ok}}
             for n in range(operations)}  # fmt: skip
    return {"openapi": "3.1.0", "info": {"title": "shared", "version": "1"}, "paths": paths,
            "components": {"schemas": {"Kind": large}}}  # fmt: skip


def test_the_definitions_tools_carry_are_bounded_across_the_import() -> None:
    """The finding: every tool's schema carries a copy of each definition it reaches, so a 1 MB description whose
    one large enum 800 operations reach compiled to a 711 MB service (766 MB of memory)."""
    document = _shared_definition(operations=40, values=100)  # the definition is about 1.4 KB as JSON
    assert len(import_openapi("shared.json", document=document).operations) == 40
    limits = SchemaLimits(max_bundled_bytes=30_000)
    with pytest.raises(SpecError, match=r"more than 30000 bytes of definitions, .*APIMCP_SCHEMA_MAX_BUNDLED_BYTES"):
        import_openapi("shared.json", document=document, schema_limits=limits)
    assert len(import_openapi("shared.json", document=_shared_definition(15, 100), schema_limits=limits).operations)
    assert from_environment({"APIMCP_SCHEMA_MAX_BUNDLED_BYTES": "1000"}).schema.max_bundled_bytes == 1000
    with pytest.raises(ValueError, match="max_bundled_bytes must be positive"):
        SchemaLimits(max_bundled_bytes=0)


def test_a_media_type_that_is_not_a_string_raised_attribute_error() -> None:
    """`content: {1: ...}` in YAML made the importer fail with AttributeError (a 500 in the control plane)."""
    operation = {
        "requestBody": {"content": {1: {"schema": {"type": "object"}}, "application/json": {"schema": {}}}},
        "responses": {"200": {"description": "ok", "content": {2: {"schema": {"type": "object"}}}}},
    }
    document = {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {"/x": {"post": operation}}}
    service = import_openapi("mem.json", document=document)
    assert [w.location for w in service.warnings] == [
        "/paths/~1x/post/requestBody/content",
        "/paths/~1x/post/responses/200/content",
    ]
    assert all(w.problem == "a media type that is not a string is left out" for w in service.warnings)
    assert service.operations[0].output_schema is None  # the 200 declares nothing usable
