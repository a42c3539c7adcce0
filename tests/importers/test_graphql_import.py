"""Importing GraphQL schemas: SDL, introspection JSON, live introspection, selections, overrides, errors."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import graphql
import jsonschema
import orjson
import pytest

from apimcp.catalog.model import GraphQLBinding, Operation, ServerTemplate, Service
from apimcp.importers.errors import SpecError
from apimcp.importers.graphql import DEFAULT_DEPTH, import_graphql, looks_like_graphql, selection
from apimcp.importers.graphql.selection import generate_selection
from tests.support.corpus import corpus_path
from tests.support.fetching import loopback_fetcher
from tests.support.graphql_server import SDL, graphql_server

VALID_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with graphql_server() as url:
        yield url


def from_sdl(sdl: str = SDL, **options: Any) -> Service:
    return import_graphql("library.graphql", name="library", version="1", content=sdl.encode(), **options)


def binding(operation: Operation | None) -> GraphQLBinding:
    assert operation is not None
    assert isinstance(operation.binding, GraphQLBinding)
    return operation.binding


def shape(service: Service) -> list[tuple[Any, ...]]:
    return [
        (op.tool_name, op.input_schema, op.output_schema, op.binding, op.hints, op.description, op.deprecated)
        for op in service.operations
    ]


def test_sdl_introspection_json_and_live_endpoint_give_the_same_tools(tmp_path: Path, endpoint: str) -> None:
    sdl_file = tmp_path / "library.graphql"
    sdl_file.write_text(SDL)
    from_file = import_graphql(str(sdl_file), name="library", version="1")
    introspection = graphql.introspection_from_schema(graphql.build_schema(SDL))
    bare = import_graphql("i.json", name="library", version="1", content=orjson.dumps(introspection))
    wrapped = import_graphql("i.json", name="library", version="1", content=orjson.dumps({"data": introspection}))
    live = import_graphql(
        endpoint, name="library", version="1", introspect=True, headers={"X-Api-Key": "k"}, fetcher=loopback_fetcher()
    )
    assert shape(from_file) == shape(bare) == shape(wrapped) == shape(live)
    assert live.servers == (ServerTemplate(endpoint),)
    assert from_file.servers == ()
    assert from_file.kind == "graphql"
    assert (from_file.name, from_file.version) == ("library", "1")
    assert [op.tool_name for op in from_file.operations][:3] == ["book", "author", "books"]


def test_queries_are_read_only_and_mutations_destructive() -> None:
    service = from_sdl()
    book, add = service.operation("book"), service.operation("addBook")
    assert book is not None and add is not None
    assert (book.hints.read_only, book.hints.destructive, book.hints.idempotent) == (True, False, True)
    assert (add.hints.read_only, add.hints.destructive) == (False, True)
    assert book.tags == ("query",) and add.tags == ("mutation",)
    assert binding(book).operation_type == "query" and binding(add).operation_type == "mutation"
    assert add.title == "Add book" and add.operation_id == "addBook"
    assert book.description == "A book by its id."
    old = service.operation("oldField")
    assert old is not None and old.deprecated and old.description == "Deprecated: Use echo."
    assert service.operation("subscription") is None


def test_every_argument_is_a_variable_declared_with_its_type() -> None:
    service = from_sdl()
    books = binding(service.operation("books"))
    # `limit: Int! = 10` takes a nullable variable, so that leaving it out lets the default apply.
    assert books.variables == {"filter": "BookFilter", "limit": "Int"}
    assert books.document.startswith(
        "query Books($filter: BookFilter, $limit: Int) { books(filter: $filter, limit: $limit) {"
    )
    assert binding(service.operation("echoMany")).variables == {"texts": "[String!]!", "times": "Int"}
    assert binding(service.operation("failing")).document == "query Failing { failing }"
    schema = graphql.build_schema(SDL)
    for op in service.operations:
        assert graphql.validate(schema, graphql.parse(binding(op).document)) == [], op.tool_name


def test_input_schemas_are_valid_and_precise() -> None:
    service = from_sdl()
    for op in service.operations:
        jsonschema.Draft202012Validator.check_schema(op.input_schema)
        assert op.input_schema["additionalProperties"] is False

    def valid(tool: str, arguments: dict[str, Any]) -> bool:
        operation = service.operation(tool)
        assert operation is not None
        return jsonschema.Draft202012Validator(operation.input_schema).is_valid(arguments)

    nested = {"filter": {"and": [{"genre": "FICTION"}, {"or": [{"titleContains": "left"}, {"genre": None}]}]}}
    assert valid("books", nested)
    assert valid("books", {}) and valid("books", {"filter": None})
    assert not valid("books", {"filter": {"genre": "POETRY"}})
    assert not valid("books", {"filter": {"unknown": 1}})
    assert not valid("books", {"limit": None})  # non-null with a default: may be left out, not nulled
    assert not valid("books", {"limit": 2**31}) and valid("books", {"limit": 2**31 - 1})
    assert not valid("book", {}) and valid("book", {"id": "b1"}) and valid("book", {"id": 7})
    assert not valid("echoMany", {"texts": ["a", None]}) and valid("echoMany", {"texts": ["a"], "times": None})
    assert not valid("addBook", {"input": {"title": "t"}})
    assert valid("addBook", {"input": {"title": "t", "authorId": "a1", "tags": ["x"], "published": "2024-01-01"}})
    add = service.operation("addBook")
    assert add is not None
    new_book = add.input_schema["$defs"]["NewBook"]
    assert new_book["required"] == ["title", "authorId"]
    assert new_book["properties"]["genre"]["default"] == "FICTION"
    assert new_book["properties"]["genre"]["description"] == "What a book is about. HISTORY: Books about the past."
    assert new_book["properties"]["published"]["description"] == "A Date. A calendar date, written YYYY-MM-DD."
    books = service.operation("books")
    assert books is not None and books.input_schema["properties"]["limit"]["default"] == 10
    assert set(books.input_schema["$defs"]) == {"BookFilter"}  # only what the tool refers to


def test_custom_scalars_oneof_and_list_defaults() -> None:
    sdl = """
    "Any JSON value." scalar JSON
    scalar URL
    input Pick @oneOf { id: ID, name: String }
    type Query {
      find(pick: Pick!, meta: JSON, home: URL, tags: [String!] = ["a", "b"]): String
    }
    """
    find = from_sdl(sdl).operation("find")
    assert find is not None
    properties = find.input_schema["properties"]
    assert properties["meta"] == {"description": "A JSON. Any JSON value."}  # any JSON value, null included
    assert properties["home"] == {"type": ["string", "null"], "description": "A URL."}
    assert properties["tags"]["default"] == ["a", "b"]
    validator = jsonschema.Draft202012Validator(find.input_schema)
    assert validator.is_valid({"pick": {"id": "1"}, "meta": {"any": [1, 2]}})
    assert not validator.is_valid({"pick": {"id": "1", "name": "x"}})
    assert not validator.is_valid({"pick": {}})
    assert not validator.is_valid({"pick": {"name": None}})


def test_selection_depth_and_cycles() -> None:
    shallow = binding(from_sdl(depth=1).operation("book")).document
    assert shallow == "query Book($id: ID!) { book(id: $id) { id title genre published pages } }"
    deep = binding(from_sdl(depth=DEFAULT_DEPTH).operation("author")).document
    # Author > books > (author: Author is on the path, related: Book is on the path): the cycle stops there.
    assert deep == (
        "query Author($id: ID!) { author(id: $id) { id name born books { id title genre published pages } } }"
    )
    requests = binding(from_sdl().operation("requestInfo")).document
    assert requests == "query RequestInfo { requestInfo { authorization apiKeyHeader apiKeyQuery } }"


def test_unions_and_interfaces_select_typename_and_fragments() -> None:
    service = from_sdl(depth=1)
    assert binding(service.operation("search")).document == (
        "query Search($text: String!) { search(text: $text) { __typename"
        " ... on Book { id title genre published pages } ... on Author { id name born } } }"
    )
    assert binding(service.operation("node")).document == (
        "query Node($id: ID!) { node(id: $id) { id __typename"
        " ... on Author { name born } ... on Book { title genre published pages } } }"
    )
    search = service.operation("search")
    assert search is not None and search.output_schema is not None
    items = search.output_schema["properties"]["search"]["items"]
    assert [b["properties"]["__typename"] for b in items["anyOf"]] == [
        {"type": "string", "const": "Book"},
        {"type": "string", "const": "Author"},
    ]


def test_fields_of_different_shapes_in_sibling_fragments_get_aliases() -> None:
    sdl = """
    type A { value: Int, name: String }
    type B { value: String, name: String }
    union U = A | B
    type Query { things: [U!]! }
    """
    things = from_sdl(sdl).operation("things")
    document = binding(things).document
    assert document == "query Things { things { __typename ... on A { value name } ... on B { value_B: value name } } }"
    assert graphql.validate(graphql.build_schema(sdl), graphql.parse(document)) == []
    assert things is not None and things.output_schema is not None
    validator = jsonschema.Draft202012Validator(things.output_schema)
    mixed = [{"__typename": "A", "value": 1, "name": None}, {"__typename": "B", "value_B": "x", "name": "n"}]
    assert validator.is_valid({"things": mixed})
    assert not validator.is_valid({"things": [{"__typename": "B", "value": 1, "name": None}]})


def test_field_budget_keeps_documents_bounded() -> None:
    fields = " ".join(f"f{i}: Int" for i in range(30))
    sdl = f"type Leaf {{ {fields} }} type Mid {{ a: Leaf b: Leaf c: Leaf x: Int }} type Query {{ top: Mid }}"
    schema = graphql.build_schema(sdl)
    top = schema.get_type("Mid")
    assert top is not None
    whole = generate_selection(schema, top, depth=2, max_fields=200)
    assert whole is not None and whole.count("f29") == 3
    # 94 fields do not fit in 50: the whole first level (4 fields) is taken, not a lopsided deeper one.
    assert generate_selection(schema, top, depth=2, max_fields=50) == "{ x }"
    leaf = schema.get_type("Leaf")
    assert leaf is not None
    assert generate_selection(schema, leaf, depth=1, max_fields=5) == "{ f0 f1 f2 f3 f4 }"


def test_fields_needing_arguments_or_paging_are_left_out() -> None:
    sdl = """
    type Conn { total: Int }
    type User { login: String avatar(size: Int): String secret(key: String!): String
                friends(first: Int, last: Int): Conn deprecatedField: Int @deprecated }
    type Query { me: User }
    """
    assert binding(from_sdl(sdl).operation("me")).document == "query Me { me { login avatar } }"


def test_query_and_mutation_of_the_same_name_get_unique_names_with_a_prefix() -> None:
    sdl = "type Query { item(id: ID!): String } type Mutation { item(id: ID!): String }"
    names = [op.tool_name for op in from_sdl(sdl, tool_prefix="lib.").operations]
    assert names[0] == "lib.item"
    assert names[1].startswith("lib.item_") and len(set(names)) == 2
    assert all(VALID_NAME.match(name) for name in names)


def test_selection_overrides_replace_the_generated_selection() -> None:
    service = from_sdl(selections={"book": "{ title author { name } }", "addBook": "{ id }"})
    book = service.operation("book")
    assert binding(book).document == "query Book($id: ID!) { book(id: $id) { title author { name } } }"
    assert book is not None and book.output_schema == {
        "type": "object",
        "properties": {
            "book": {
                "type": ["object", "null"],
                "properties": {
                    "title": {"type": "string"},
                    "author": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
                "required": ["title", "author"],
                "additionalProperties": False,
            }
        },
        "required": ["book"],
        "additionalProperties": False,
    }
    assert binding(service.operation("addBook")).document.endswith("addBook(input: $input) { id } }")


def test_overrides_may_use_fragments_aliases_and_directives() -> None:
    override = "{ __typename ... on Book { bookTitle: title pages @include(if: true) } }"
    node = from_sdl(selections={"node": override}).operation("node")
    assert node is not None and node.output_schema is not None
    validator = jsonschema.Draft202012Validator(node.output_schema)
    assert validator.is_valid({"node": {"__typename": "Author"}})
    assert validator.is_valid({"node": {"__typename": "Book", "bookTitle": "T"}})  # pages may be skipped
    assert not validator.is_valid({"node": {"__typename": "Author", "bookTitle": "T"}})


@pytest.mark.parametrize(
    ("selections", "message"),
    [
        ({"book": "{ nope }"}, "tool 'book' is not valid: Cannot query field 'nope' on type 'Book'"),
        ({"book": "{ title"}, "tool 'book' is not valid: Syntax Error: Expected Name, found <EOF>"),
        ({"echo": "{ length }"}, "tool 'echo' is not valid: Field 'echo' must not have a selection"),
        ({"book": "{ id } } query Other { failing"}, "tool 'book' is not valid: an override must be one selection set"),
        ({"missing": "{ id }"}, "selection overrides name no tool or root field: missing"),
    ],
)
def test_bad_overrides_are_refused_naming_the_tool(selections: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        from_sdl(selections=selections)


@pytest.mark.parametrize(
    ("content", "options", "message"),
    [
        (SDL, {"name": ""}, "a service name is required"),
        (SDL, {"version": " "}, "a service version is required"),
        (
            "type Query {\n  a: Int\n  b(: Int\n}",
            {},
            "invalid GraphQL SDL at line 3, column 5: Syntax Error: Expected Name",
        ),
        ("type Query { a: Missing }", {}, "invalid GraphQL SDL: Unknown type 'Missing'. at line 1, column 17"),
        ("type Book { id: ID }", {}, "the schema has no Query type"),
        ('{"openapi": "3.1.0"}', {}, "a JSON document must be an introspection result"),
        ("{not json", {}, "not valid JSON"),
        (SDL, {"depth": 0}, "the selection depth must be at least 1"),
        ("interface I { a: Int } type T implements I { b: Int } type Query { t: T }", {}, "invalid GraphQL schema"),
    ],
)
def test_bad_inputs_get_clear_errors(content: str, options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"name": "library", "version": "1", **options}
    with pytest.raises(SpecError, match=re.escape(message)) as caught:
        import_graphql("bad.graphql", content=content.encode(), **arguments)
    assert str(caught.value).startswith("bad.graphql: ")


def test_introspection_of_something_that_is_not_graphql_fails_clearly(endpoint: str) -> None:
    base = endpoint.removesuffix("/graphql")
    with pytest.raises(SpecError, match=re.escape("introspection failed: HTTP 503 Service Unavailable")):
        import_graphql(f"{base}/status/503", name="x", version="1", introspect=True, fetcher=loopback_fetcher())
    with pytest.raises(SpecError, match="introspection needs an http"):
        import_graphql("/tmp/schema.graphql", name="x", version="1", introspect=True)


def test_looks_like_graphql() -> None:
    introspection = graphql.introspection_from_schema(graphql.build_schema(SDL))
    assert looks_like_graphql(SDL.encode())
    assert looks_like_graphql(b"schema { query: Root }\ntype Root { a: Int }")
    assert looks_like_graphql(b'# comment\ntype Query @key(fields: "id") { a: Int }')
    assert looks_like_graphql(orjson.dumps(introspection))
    assert looks_like_graphql(orjson.dumps({"data": introspection}))
    assert not looks_like_graphql(b'{"openapi": "3.1.0", "paths": {}}')
    assert not looks_like_graphql(b"openapi: 3.1.0\ncomponents:\n  schemas:\n    A:\n      type: object\n")
    assert not looks_like_graphql(b'syntax = "proto3";\nenum E { A = 0; }\nmessage M { string type = 1; }')
    assert not looks_like_graphql(b"{broken")


def test_github_schema(capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_path("graphql", "github", "schema.graphql")
    started = time.perf_counter()
    service = import_graphql(str(path), name="github", version="1")
    elapsed = time.perf_counter() - started
    schema = graphql.build_schema(path.read_text(), assume_valid=True, assume_valid_sdl=True)
    names = [op.tool_name for op in service.operations]
    assert len(names) == len(set(names))
    assert all(VALID_NAME.match(name) for name in names), [n for n in names if not VALID_NAME.match(n)]
    assert len(names) == len(schema.query_type.fields) + len(schema.mutation_type.fields)  # type: ignore[union-attr]
    for op in service.operations:
        jsonschema.Draft202012Validator.check_schema(op.input_schema)
        assert op.output_schema is not None
        jsonschema.Draft202012Validator.check_schema(op.output_schema)
        errors = graphql.validate(schema, graphql.parse(binding(op).document))
        assert errors == [], (op.tool_name, errors[:3])
    repository = service.operation("repository")
    assert repository is not None and repository.hints.read_only
    assert "owner" in repository.input_schema["required"] and "name" in repository.input_schema["required"]
    assert service.operation("createIssue") is not None
    documents = sum(len(binding(op).document) for op in service.operations)
    outputs = sum(len(json.dumps(op.output_schema)) for op in service.operations)
    with capsys.disabled():
        print(
            f"\nGitHub: {len(names)} tools, documents {documents} chars, "
            f"output schemas {outputs} chars, imported in {elapsed:.1f} s"
        )
    assert documents < 1_000_000


def test_a_type_with_nothing_selectable_still_gets_a_valid_selection() -> None:
    sdl = b"type Query { me: User } type User { followers(first: Int!): [User!]! }"
    service = import_graphql("me.graphql", name="me", version="1", content=sdl)
    binding = service.operations[0].binding
    assert isinstance(binding, GraphQLBinding)
    assert binding.document == "query Me { me { __typename } }"


def test_the_fields_a_selection_looks_at_are_bounded_whatever_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The finding: an object field whose sub-selection came out empty gave its share of the budget back, so types
    of many object fields leading nowhere made the walk visit fields^depth of them (a 4.5 KB schema took 68 s of
    CPU). Now the fields looked at are bounded too: a shallower selection is taken."""
    n = 100
    sdl = ("type Query { r: A }\n"
           "type A { " + " ".join(f"a{i}: B" for i in range(n)) + " }\n"
           "type B { " + " ".join(f"b{i}: C" for i in range(n)) + " }\n"
           "type C { " + " ".join(f"c{i}: D" for i in range(n)) + " }\n"
           "type D { x(k: Int!): Int }\n")  # fmt: skip
    looked_at = [0]
    counted = selection._selectable

    def counting(field: Any) -> bool:
        looked_at[0] += 1
        return counted(field)

    monkeypatch.setattr(selection, "_selectable", counting)
    service = import_graphql("chain.graphql", name="g", version="1", content=sdl.encode())
    assert [op.binding.document for op in service.operations] == ["query R { r { __typename } }"]  # type: ignore[union-attr]
    assert looked_at[0] <= 3 * selection.DEFAULT_MAX_FIELDS * selection.SCANS_PER_FIELD + n
