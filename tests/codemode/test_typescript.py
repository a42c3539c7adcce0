"""TypeScript declarations of tools from their JSON Schemas: what each construct becomes, and the bounds that keep
a huge or cyclic schema from making a huge declaration."""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from apimcp.codemode.typescript import MAX_CHARS, access, declaration, declarations, summary
from apimcp.protocol.models import Tool


def _args(schema: dict[str, Any]) -> str:
    """The type of the one argument `x` of a tool whose input schema has it with `schema`."""
    tool = Tool(name="t", input_schema={"type": "object", "properties": {"x": schema}, "required": ["x"]})
    (line,) = [line for line in declaration(tool).splitlines() if line.startswith("    x: ")]
    return line.removeprefix("    x: ").removesuffix(";")


@pytest.mark.parametrize(
    ("schema", "written"),
    [
        ({"type": "string"}, "string"),
        ({"type": "integer"}, "number"),
        ({"type": "number"}, "number"),
        ({"type": "boolean"}, "boolean"),
        ({"type": "null"}, "null"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"type": "string", "nullable": True}, "string | null"),
        ({"enum": ["a", "b", 3]}, '"a" | "b" | 3'),
        ({"const": "only"}, '"only"'),
        ({"type": "array", "items": {"type": "string"}}, "string[]"),
        ({"type": "array", "items": {"type": ["string", "integer"]}}, "(string | number)[]"),
        ({"type": "array"}, "unknown[]"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, "[string, number]"),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "string | number"),
        ({"oneOf": [{"type": "string"}, {}]}, "unknown"),
        ({"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}}, {"type": "object"}]},
         "{ a?: string; } & { [key: string]: unknown; }"),
        ({"type": "object", "properties": {"a-b": {"type": "string"}}, "required": ["a-b"]}, '{ "a-b": string; }'),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "{ [key: string]: number; }"),
        ({"type": "object", "properties": {}, "additionalProperties": False}, "{}"),
        ({"$ref": "#/$defs/nowhere"}, "unknown"),
        ({}, "unknown"),
        ({"enum": list(range(100))}, "unknown"),  # too long to be worth a union
        # an index signature beside properties takes their types too, or TypeScript refuses it (TS2411)
        ({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
          "additionalProperties": {"type": "integer"}}, "{ name: string; [key: string]: number | string; }"),
        ({"type": "object", "properties": {"name": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
         "{ name?: string; [key: string]: number | string | undefined; }"),
        # brackets and bars inside string literals do not hide a union
        ({"type": "array", "items": {"enum": ["{", "b"]}}, '("{" | "b")[]'),
        ({"allOf": [{"enum": ["}", "c"]}, {"type": "string"}]}, '("}" | "c") & string'),
        ({"type": "array", "items": {"enum": ['a"|"(', "b"]}}, '("a\\"|\\"(" | "b")[]'),
        ({"type": "array", "items": {"const": "x | y"}}, '"x | y"[]'),
    ],
)  # fmt: skip
def test_each_schema_construct_becomes_its_typescript(schema: dict[str, Any], written: str) -> None:
    assert _args(schema) == written


def test_local_references_resolve_and_a_cycle_ends_as_unknown() -> None:
    node = {"type": "object", "properties": {"name": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}}}
    tool = Tool(
        name="walk",
        input_schema={"type": "object", "properties": {"x": {"$ref": "#/$defs/Node"}}, "$defs": {"Node": node}},
    )
    assert "    x?: { name?: string; next?: unknown; };" in declaration(tool).splitlines()


def test_a_declaration_names_the_tool_its_arguments_and_what_it_resolves_to() -> None:
    tool = Tool(
        name="pulls_merge",
        title="Merge a pull request",
        description="Merges. And more.",
        input_schema={
            "type": "object",
            "properties": {"owner": {"type": "string", "description": "The owner. Case does not matter."},
                           "method": {"type": "string", "enum": ["merge", "squash"]}},
            "required": ["owner"],
        },
        output_schema={"type": "object", "properties": {"merged": {"type": "boolean"}}},
    )  # fmt: skip
    assert declarations([tool]) == (
        "declare const tools: {\n"
        "  /** Merge a pull request */\n"
        "  pulls_merge(args: {\n"
        "    /** The owner. */\n"
        "    owner: string;\n"
        '    method?: "merge" | "squash";\n'
        "  }): Promise<{ merged?: boolean; }>;\n"
        "};"
    )


def test_a_tool_without_arguments_or_with_an_odd_name_is_declared_so_that_a_program_can_call_it() -> None:
    tool = Tool(name="get-me", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    assert declaration(tool) == '  "get-me"(args?: {}): Promise<unknown>;'
    assert access("get-me") == 'tools["get-me"]' and access("get_me") == "tools.get_me"


def test_a_huge_schema_is_written_shallower_until_it_fits() -> None:
    wide = {"type": "object", "properties": {f"field_{n}": {"type": "string"} for n in range(400)}}
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(30):
        deep = {"type": "object", "properties": {"inner": deep, "wide": wide}}
    tool = Tool(name="big", input_schema={"type": "object", "properties": {"x": deep}}, output_schema=deep)
    text = declaration(tool)
    assert len(text) <= MAX_CHARS
    assert text.startswith("  big(args: {")


def test_a_comment_cannot_be_closed_by_a_description() -> None:
    assert summary("Ends the comment */ then code") == "Ends the comment * / then code"
    assert summary("x" * 400).endswith("…") and len(summary("x " * 200)) <= 160


def test_definitions_that_share_sub_schemas_are_read_within_a_budget() -> None:
    """Each definition refers to the next one ten times: read whole, six levels would be a million nodes (the
    gateway's event loop once spent 20 s on a 4 KB schema like this); within the budget, a shallower depth."""
    definitions = {
        f"d{n}": {"type": "object", "properties": {f"p{i}": {"$ref": f"#/$defs/d{n + 1}"} for i in range(10)}}
        for n in range(8)
    }
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": definitions}
    written = declaration(Tool(name="t", input_schema=schema))
    assert len(written) <= MAX_CHARS and "    x?: { p0?: { p0?: unknown; p1?: unknown;" in written


def test_a_long_literal_shared_by_many_properties_costs_a_bounded_amount() -> None:
    """The finding: 990 properties referring to one 1 MB `const` wrote a gigabyte of types before the
    declaration's length was checked, at seven depths in turn (14 s and 4 GB of the gateway's memory, for one
    describe_tools or one discovery report). Now a literal past 200 characters is its type, and the characters of
    types written at one depth are bounded."""
    schema = {"type": "object", "properties": {f"p{i}": {"$ref": "#/$defs/E"} for i in range(990)},
              "$defs": {"E": {"const": "x" * 1_000_000}}}  # fmt: skip
    tracemalloc.start()
    try:
        written = declaration(Tool(name="t", input_schema=schema))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(written) <= MAX_CHARS and peak < 8 * 2**20, peak
    short = {"type": "object", "properties": {"a": {"const": "x" * 200}, "b": {"const": "y" * 201}}}
    assert 'a?: "' + "x" * 200 + '";' in declaration(Tool(name="t", input_schema=short))
    assert "b?: string;" in declaration(Tool(name="t", input_schema=short))


def test_a_long_chain_of_references_ends_as_unknown() -> None:
    """The finding: 1,500 definitions each only a `$ref` to the next raised RecursionError (an internal error of
    describe_tools, a 500 of the discovery report): references did not count toward any bound."""
    chain = {f"d{n}": {"$ref": f"#/$defs/d{n + 1}"} for n in range(1500)}
    chain["d1500"] = {"type": "string"}
    schema = {"type": "object", "properties": {"p": {"$ref": "#/$defs/d0"}}, "$defs": chain}
    assert "    p?: unknown;" in declaration(Tool(name="t", input_schema=schema))
    short = {"type": "object", "properties": {"p": {"$ref": "#/$defs/d1490"}}, "$defs": chain}
    assert "    p?: string;" in declaration(Tool(name="t", input_schema=short))


def test_an_odd_schema_of_an_mcp_server_is_declared_all_the_same() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "description": 5}, "b": {"type": "integer"}},
              "required": [{"odd": 1}, "b"]}  # fmt: skip
    assert declaration(Tool(name="odd", input_schema=schema)).splitlines() == [
        "  odd(args: {",
        "    a?: string;",
        "    b: number;",
        "  }): Promise<unknown>;",
    ]
    assert summary(5) == summary(None) == ""  # type: ignore[arg-type]


def test_a_tool_named_new_is_a_method_not_a_constructor() -> None:
    assert declaration(Tool(name="new", input_schema={"type": "object"})).startswith('  "new"(args: {')
    assert access("new") == "tools.new"


def test_a_schema_the_writer_fails_on_still_declares_the_tool_with_loose_arguments(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def failing(*args: object) -> str:
        raise RuntimeError("unforeseen")

    monkeypatch.setattr("apimcp.codemode.typescript._Writer.type_of", failing)
    tool = Tool(name="t", title="T", input_schema={"type": "object", "properties": {"x": {"type": "string"}}})
    assert declaration(tool).splitlines() == [
        "  /** T */",
        "  t(args: {",
        "    [key: string]: unknown;",
        "  }): Promise<unknown>;",
    ]
    assert "fell back to loose arguments" in caplog.text
