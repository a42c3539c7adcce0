"""Output filters: JSON-pointer retention, RFC 6902 patches and TOON, failing open, with truthful schemas."""

from __future__ import annotations

import copy
import logging
from typing import Any

import jsonschema
import orjson
import pytest
import toon_format
from hypothesis import given, settings
from hypothesis import strategies as st

from apimcp.artifacts.output_filters import FilterError, OutputFilter
from apimcp.protocol.models import NO_VALUE, CallToolResult, ImageContent, TextContent
from tests.artifacts.test_json_patch import doubling_patch

DOC: dict[str, Any] = {
    "data": {
        "items": [
            {"name": "a", "id": 1, "tags": ["x"]},
            {"id": 2},
            7,
            {"name": "c", "id": 3},
        ],
        "debug": {"trace": "t"},
    },
    "total": 3,
    "a/b": "slash",
    "c~d": "tilde",
    "": "empty name",
}


def retained(pointers: list[str], value: Any = DOC) -> Any:
    """What retention keeps of `value`, read back from a structured result."""
    result = OutputFilter.from_spec({"jsonRetain": pointers}).apply(structured(value))
    return result.structured_content


def structured(value: Any, *extra: TextContent | ImageContent) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=orjson.dumps(value).decode()), *extra), structured_content=value)


def text_only(text: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=text),))


# --- jsonRetain -----------------------------------------------------------------------------------


def test_the_last_segment_keeps_the_whole_subtree() -> None:
    assert retained(["/data/debug"]) == {"data": {"debug": {"trace": "t"}}}
    assert retained(["/total"]) == {"total": 3}


def test_nested_pointers_keep_only_their_branch() -> None:
    assert retained(["/data/debug/trace"]) == {"data": {"debug": {"trace": "t"}}}
    assert retained(["/data/items/0/tags/0"]) == {"data": {"items": [{"tags": ["x"]}]}}


def test_a_name_meeting_an_array_applies_to_every_element() -> None:
    # the scalar element has no `name` to keep and is dropped; an object without one stays, empty
    assert retained(["/data/items/name"]) == {"data": {"items": [{"name": "a"}, {}, {"name": "c"}]}}


def test_a_top_level_array_is_retained_per_element() -> None:
    rows = [{"id": 1, "secret": "s"}, {"id": 2, "secret": "t"}, [{"id": 3, "x": 0}]]
    assert retained(["/id"], rows) == [{"id": 1}, {"id": 2}, [{"id": 3}]]


def test_a_decimal_segment_on_an_array_selects_that_element() -> None:
    assert retained(["/data/items/1"]) == {"data": {"items": [{"id": 2}]}}
    assert retained(["/data/items/3", "/data/items/0/name"]) == {
        "data": {"items": [{"name": "a"}, DOC["data"]["items"][3]]}
    }
    # an index out of range is a missing path; "01" is no RFC 6901 index, so it is a member name
    assert retained(["/data/items/9"]) == {"data": {"items": []}}
    assert retained(["/rows/01"], {"rows": [{"01": "k", "1": "no"}]}) == {"rows": [{"01": "k"}]}


def test_an_index_and_a_name_on_the_same_array_combine() -> None:
    # element 0 keeps its id and, like every element, its name
    assert retained(["/data/items/0/id", "/data/items/name"]) == {
        "data": {"items": [{"name": "a", "id": 1}, {}, {"name": "c"}]}
    }


def test_escaped_segments_are_unescaped() -> None:
    assert retained(["/a~1b", "/c~0d"]) == {"a/b": "slash", "c~d": "tilde"}
    assert retained(["/~01"], {"~1": "tilde-one", "/": "slash"}) == {"~1": "tilde-one"}


def test_missing_paths_are_ignored() -> None:
    assert retained(["/nope", "/data/nope/deeper", "/total/below", "/data/items/9/name"]) == {"data": {"items": []}}


def test_several_pointers_merge_in_the_values_order() -> None:
    kept = retained(["/total", "/data/debug", "/a~1b"])
    assert kept == {"data": {"debug": {"trace": "t"}}, "total": 3, "a/b": "slash"}
    assert list(kept) == ["data", "total", "a/b"]
    # a pointer inside a kept subtree changes nothing, in either order
    assert retained(["/data", "/data/debug"]) == retained(["/data/debug", "/data"]) == {"data": DOC["data"]}


def test_the_empty_pointer_is_the_whole_document_and_slash_the_empty_name() -> None:
    result = structured(DOC)
    assert OutputFilter.from_spec({"jsonRetain": ["", "/total"]}).apply(result) is result
    assert retained(["/"]) == {"": "empty name"}


def test_retention_keeps_the_structure_it_goes_through() -> None:
    # the containers on the way stay (a required member stays present); scalars on the way do not
    assert retained(["/a/b/c", "/s/t"], {"a": {"b": {"x": 1}}, "s": "text"}) == {"a": {"b": {}}}


def test_pointers_mixing_indexes_and_names_cannot_multiply_the_branches_without_bound() -> None:
    # /0/a/a/..., /a/0/a/..., /a/a/0/...: each selected element follows the merge of both, level after level;
    # 14 of these made 25,000 branches when compiled (each one more, four times as many), on attach and on the gateway
    def diagonal(size: int) -> list[str]:
        return ["/" + "/".join("0" if column == row else "a" for column in range(size)) for row in range(size)]

    assert retained(diagonal(2), [{"a": 1, "b": 2}, [5, 6]]) == [{"a": 1}, []]
    for size in (14, 40):
        with pytest.raises(FilterError, match=r"^jsonRetain: the pointers combine array indexes and names into more"):
            OutputFilter.from_spec({"jsonRetain": diagonal(size)})


def test_filtering_never_changes_the_original_structured_content() -> None:
    original = copy.deepcopy(DOC)
    result = structured(original)
    OutputFilter.from_spec(
        {"jsonRetain": ["/data/items/name"], "jsonPatches": [{"op": "add", "path": "/n", "value": 1}]}
    ).apply(result)
    assert result.structured_content == DOC


# --- jsonPatches and the order of the steps --------------------------------------------------------


def test_patches_apply_in_order() -> None:
    spec = {
        "jsonPatches": [
            {"op": "add", "path": "/note", "value": "first"},
            {"op": "replace", "path": "/note", "value": "second"},
            {"op": "move", "from": "/note", "path": "/moved"},
            {"op": "copy", "from": "/moved", "path": "/copied"},
            {"op": "remove", "path": "/data"},
            {"op": "test", "path": "/copied", "value": "second"},
        ]
    }
    out = OutputFilter.from_spec(spec).apply(structured({"data": 1, "total": 2}))
    assert out.structured_content == {"total": 2, "moved": "second", "copied": "second"}


def test_retention_runs_before_patches() -> None:
    # the patch adds a member retention does not name, and reads one retention kept
    spec = {
        "jsonRetain": ["/total"],
        "jsonPatches": [
            {"op": "copy", "from": "/total", "path": "/count"},
            {"op": "add", "path": "/extra", "value": 1},
        ],
    }
    assert OutputFilter.from_spec(spec).apply(structured(DOC)).structured_content == {
        "total": 3,
        "count": 3,
        "extra": 1,
    }
    # and a patch on what retention dropped fails (so the result passes unfiltered)
    result = structured(DOC)
    dropped = {"jsonRetain": ["/total"], "jsonPatches": [{"op": "remove", "path": "/data"}]}
    assert OutputFilter.from_spec(dropped).apply(result) is result


@pytest.mark.parametrize(
    "patch",
    [
        {"op": "remove", "path": "/absent"},
        {"op": "replace", "path": "/data/items/42", "value": 0},
        {"op": "test", "path": "/total", "value": 4},
        {"op": "test", "path": "/absent", "value": 4},
        {"op": "add", "path": "/absent/child", "value": 1},
    ],
)
def test_a_failing_patch_returns_the_original_result(patch: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    secret = {"secret": "s3cr3t-value", "total": 3, "data": {"items": []}}
    result = structured(secret)
    spec = {"jsonPatches": [{"op": "add", "path": "/added", "value": 1}, patch]}
    with caplog.at_level(logging.WARNING, logger="apimcp.artifacts"):
        out = OutputFilter.from_spec(spec, tool="get_things").apply(result)
    assert out is result
    assert result.structured_content == {"secret": "s3cr3t-value", "total": 3, "data": {"items": []}}
    [record] = caplog.records
    assert record.name == "apimcp.artifacts" and record.levelno == logging.WARNING
    message = record.getMessage()
    assert "get_things" in message and f"jsonPatches[1] ({patch['op']} {patch['path']})" in message
    assert "s3cr3t" not in message


def test_a_compiled_filter_gives_the_same_result_every_time() -> None:
    # values a patch adds are copied, so changing one result cannot leak into the next
    output_filter = OutputFilter.from_spec({"jsonPatches": [{"op": "add", "path": "/list", "value": [1]}]})
    first = output_filter.apply(structured({}))
    first.structured_content["list"].append(2)
    assert output_filter.apply(structured({})).structured_content == {"list": [1]}


def test_one_output_filter_cannot_freeze_the_gateway(caplog: pytest.LogCaptureFixture) -> None:
    # 16 doublings would build 2**16 widgets (~2 MB of JSON, ten times that in memory) before the test fails;
    # the patch stops at the copy that would take it past what patches may add (1 MiB by default), so the
    # document never grew by more, and the answer passes unfiltered
    doublings = [*doubling_patch(16), {"op": "test", "path": "/absent", "value": 1}]
    output_filter = OutputFilter.from_spec({"jsonPatches": doublings}, tool="get_item")
    result = structured({"id": 1})
    with caplog.at_level(logging.WARNING, logger="apimcp.artifacts"):
        assert output_filter.apply(result) is result
    [record] = caplog.records
    assert "jsonPatches[71] (copy /t) failed: the patch would add more than 1048576 bytes" in record.getMessage()


def test_a_failing_patch_on_text_returns_the_original_text() -> None:
    result = text_only('{"total": 3}')
    out = OutputFilter.from_spec({"jsonPatches": [{"op": "test", "path": "/total", "value": "3"}]}).apply(result)
    assert out is result


# --- what is filtered, what passes ------------------------------------------------------------------


def test_text_json_is_filtered_and_stays_without_structured_content() -> None:
    note = TextContent(text="a note")
    result = CallToolResult(content=(TextContent(text=orjson.dumps(DOC).decode()), note), meta={"k": "v"})
    out = OutputFilter.from_spec({"jsonRetain": ["/total"]}).apply(result)
    assert out.structured_content is NO_VALUE
    assert out.content == (out.content[0], note)
    assert isinstance(out.content[0], TextContent) and out.content[0].text == '{"total":3}'
    assert out.meta == {"k": "v"} and not out.is_error


def test_structured_content_is_filtered_and_its_text_rewritten() -> None:
    note = TextContent(text="note")
    image = ImageContent(data="AAAA", mime_type="image/png")
    out = OutputFilter.from_spec({"jsonRetain": ["/total"]}).apply(structured(DOC, note, image))
    assert out.structured_content == {"total": 3}
    assert isinstance(out.content[0], TextContent) and out.content[0].text == orjson.dumps({"total": 3}).decode()
    assert out.content[1] is note and out.content[2] is image and len(out.content) == 3


def test_structured_content_without_text_gets_a_text_block_first() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    out = OutputFilter.from_spec({"jsonRetain": ["/total"]}).apply(
        CallToolResult(content=(image,), structured_content=DOC)
    )
    assert isinstance(out.content[0], TextContent) and out.content[0].text == '{"total":3}'
    assert out.content[1] is image


@pytest.mark.parametrize("text", ["not json", "{'single': 'quotes'}", "", '{"total": 3'])
def test_text_that_is_not_json_passes_unchanged(text: str, caplog: pytest.LogCaptureFixture) -> None:
    result = text_only(text)
    with caplog.at_level(logging.WARNING, logger="apimcp.artifacts"):
        assert OutputFilter.from_spec({"jsonRetain": ["/total"], "convertToToon": True}).apply(result) is result
    assert "not JSON" in caplog.text
    assert not text or text not in caplog.text


def test_results_without_text_or_json_pass_unchanged() -> None:
    image_only = CallToolResult(content=(ImageContent(data="AAAA", mime_type="image/png"),))
    empty = CallToolResult()
    spec_filter = OutputFilter.from_spec({"jsonRetain": ["/total"]})
    assert spec_filter.apply(image_only) is image_only
    assert spec_filter.apply(empty) is empty


def test_a_scalar_cannot_be_retained_from_and_passes_unchanged() -> None:
    result = text_only("42")
    assert OutputFilter.from_spec({"jsonRetain": ["/total"]}).apply(result) is result
    # but patches and TOON work on any JSON value
    patched = OutputFilter.from_spec({"jsonPatches": [{"op": "replace", "path": "", "value": 43}]}).apply(result)
    assert isinstance(patched.content[0], TextContent) and patched.content[0].text == "43"


@pytest.mark.parametrize(
    "result",
    [
        CallToolResult(content=(TextContent(text='{"total": 3, "data": 1}'),), is_error=True),
        CallToolResult(content=(TextContent(text="{}"),), structured_content={"total": 3, "data": 1}, is_error=True),
    ],
)
def test_error_results_pass_unfiltered(result: CallToolResult) -> None:
    spec = {"jsonRetain": ["/total"], "jsonPatches": [{"op": "remove", "path": "/total"}], "convertToToon": True}
    assert OutputFilter.from_spec(spec).apply(result) is result


def test_an_empty_filter_changes_nothing() -> None:
    result = structured(DOC)
    for spec in ({}, {"jsonRetain": [], "jsonPatches": [], "convertToToon": False}, {"jsonRetain": None}):
        assert OutputFilter.from_spec(spec).apply(result) is result


# --- convertToToon ------------------------------------------------------------------------------


def test_toon_changes_the_text_while_structured_content_stays_json() -> None:
    spec = {
        "jsonRetain": ["/data/items/name", "/total"],
        "jsonPatches": [{"op": "remove", "path": "/total"}],
        "convertToToon": True,
    }
    out = OutputFilter.from_spec(spec).apply(structured(DOC))
    expected = {"data": {"items": [{"name": "a"}, {}, {"name": "c"}]}}
    assert out.structured_content == expected
    assert isinstance(out.content[0], TextContent) and out.content[0].text == toon_format.encode(expected)


def test_toon_of_a_text_result() -> None:
    rows = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    out = OutputFilter.from_spec({"convertToToon": True}).apply(text_only(orjson.dumps(rows).decode()))
    assert out.structured_content is NO_VALUE
    assert isinstance(out.content[0], TextContent) and out.content[0].text == toon_format.encode(rows)
    assert out.content[0].text != orjson.dumps(rows).decode()


def deep_list(members: int = 10_000, depth: int = 250) -> Any:
    """Issue 21, L3: empty objects `depth` levels down, each one a line of 2·depth spaces in TOON."""
    value: Any = [{} for _ in range(members)]
    for _ in range(depth):
        value = [value, [1]]
    return value


def test_toon_far_larger_than_the_json_fails_open(caplog: pytest.LogCaptureFixture) -> None:
    """A deep answer grew with its depth: 31 KB of JSON (filtered on the event loop) made 5.2 MB of TOON. TOON text
    is bounded to 4 times the JSON (or 64 KiB); past that, the result passes as it was."""
    answer = deep_list()
    size = len(orjson.dumps(answer))
    assert size < 32 * 1024 and len(toon_format.encode(answer)) > 160 * size
    result = structured(answer)
    with caplog.at_level(logging.WARNING, logger="apimcp.artifacts"):
        out = OutputFilter.from_spec({"convertToToon": True}, tool="deep").apply(result)
    assert out is result
    assert sum(len(block.text) for block in out.content if isinstance(block, TextContent)) <= 4 * size
    [record] = caplog.records
    assert record.getMessage() == (
        f"output filter of tool 'deep' not applied: convertToToon: the TOON text would pass {4 * size} characters, "
        f"the larger of 4 times the JSON's {size} and 65536; the result passes unfiltered"
    )


# --- output schemas ------------------------------------------------------------------------------

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "description": "a page of items",
    "properties": {
        "data": {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "id": {"type": "integer"},
                            "owner": {"$ref": "#/$defs/owner"},
                        },
                        "required": ["name", "id"],
                        "additionalProperties": False,
                    },
                },
                "debug": {"type": ["object", "null"], "properties": {"trace": {"type": "string"}}},
            },
            "required": ["items", "debug"],
            "minProperties": 2,
        },
        "total": {"type": "integer", "minimum": 0},
        "links": {"type": "object", "additionalProperties": {"type": "string"}},
        "variant": {"oneOf": [{"type": "object", "properties": {"k": {"type": "string"}}}, {"type": "string"}]},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
        "remote": {"$ref": "https://example.com/schemas/remote.json"},
    },
    "required": ["data", "total"],
    "additionalProperties": False,
    "$defs": {"owner": {"type": "object", "properties": {"login": {"type": "string"}}}},
}


def pruned(pointers: list[str], schema: dict[str, Any] = SCHEMA) -> Any:
    return OutputFilter.from_spec({"jsonRetain": pointers}).output_schema(schema)


def test_retention_prunes_the_schema_to_what_it_keeps() -> None:
    assert pruned(["/data/items/name", "/total"]) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "description": "a page of items",
        "properties": {
            "data": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                    }
                },
                "required": ["items"],
            },
            "total": {"type": "integer", "minimum": 0},
        },
        "required": ["data", "total"],
        "$defs": SCHEMA["$defs"],
    }


def test_a_nullable_branch_gone_through_is_no_longer_required() -> None:
    # debug may be null, which retention drops when it goes through it: it may now be absent
    data = pruned(["/data/debug/trace"])["properties"]["data"]
    assert "required" not in data
    assert data["properties"]["debug"] == {"type": ["object", "null"], "properties": {"trace": {"type": "string"}}}
    assert retained(["/data/debug/trace"], {"data": {"debug": None, "items": []}}) == {"data": {}}


def test_a_kept_subtree_keeps_its_schema_and_refs() -> None:
    kept = pruned(["/data/items/owner"])
    assert kept["properties"]["data"]["properties"]["items"]["items"]["properties"] == {
        "owner": {"$ref": "#/$defs/owner"}
    }
    assert kept["$defs"] == SCHEMA["$defs"]
    # an index keeping elements whole describes them as before
    assert (
        pruned(["/data/items/0"])["properties"]["data"]["properties"]["items"]["items"]
        == SCHEMA["properties"]["data"]["properties"]["items"]["items"]
    )


def test_a_top_level_array_schema_is_pruned_through_its_items() -> None:
    rows = {
        "type": "array",
        "maxItems": 5,
        "items": {"type": "object", "properties": {"id": {}, "x": {}}, "required": ["id", "x"]},
    }
    assert pruned(["/id"], rows) == {
        "type": "array",
        "maxItems": 5,
        "items": {"type": "object", "properties": {"id": {}}, "required": ["id"]},
    }


def test_local_references_are_followed_where_a_pointer_goes_through_them() -> None:
    kept = pruned(["/data/items/owner/login"])
    assert kept is not None
    owner = kept["properties"]["data"]["properties"]["items"]["items"]["properties"]["owner"]
    assert owner == {"type": "object", "properties": {"login": {"type": "string"}}}
    assert kept["$defs"] == SCHEMA["$defs"]  # untouched branches may still refer to them


def test_a_member_that_cannot_exist_is_left_out_of_the_schema() -> None:
    assert pruned(["/total", "/unknown"])["properties"] == {"total": SCHEMA["properties"]["total"]}


@pytest.mark.parametrize(
    "pointers",
    [
        ["/data/items/owner/x"],  # a member only additionalProperties would describe, reached through a $ref
        ["/remote/x"],  # through a $ref to another document
        ["/variant/k"],  # through oneOf
        ["/links/self"],  # a member only additionalProperties describes
        ["/pair/name"],  # a tuple
        ["/data/items/0/id", "/data/items/name"],  # elements kept two ways
    ],
)
def test_a_schema_that_cannot_be_followed_is_dropped(pointers: list[str]) -> None:
    assert pruned(pointers) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "object"}}},  # nothing says what /a/b is
        {"type": "object", "patternProperties": {"^a": {"type": "object"}}},
        {"type": "object", "properties": {"a": {"allOf": [{"type": "object"}]}}},
        {"type": "object", "properties": {"a": {"type": "array"}}},  # arrays without items
        {"type": "object", "properties": {"a": True}},
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": 7, "properties": {"b": {}}}}},  # not a schema
    ],
)
def test_more_schemas_that_cannot_be_followed(schema: dict[str, Any]) -> None:
    assert pruned(["/a/b"], schema) is None


def test_patches_drop_the_schema_and_toon_keeps_it() -> None:
    patch = [{"op": "remove", "path": "/total"}]
    assert OutputFilter.from_spec({"jsonPatches": patch}).output_schema(SCHEMA) is None
    assert OutputFilter.from_spec({"jsonRetain": ["/total"], "jsonPatches": patch}).output_schema(SCHEMA) is None
    assert OutputFilter.from_spec({"convertToToon": True}).output_schema(SCHEMA) is SCHEMA
    assert OutputFilter.from_spec({"jsonRetain": ["/total"], "convertToToon": True}).output_schema(SCHEMA) == pruned(
        ["/total"]
    )
    assert OutputFilter.from_spec({"jsonRetain": [""]}).output_schema(SCHEMA) is SCHEMA
    assert OutputFilter.from_spec({"jsonRetain": ["/total"]}).output_schema(None) is None


ITEM = st.fixed_dictionaries(
    {"name": st.text(max_size=3), "id": st.integers(-(2**63), 2**63 - 1)},
    optional={"owner": st.fixed_dictionaries({}, optional={"login": st.text(max_size=3)})},
)
PAGE = st.fixed_dictionaries(
    {
        "data": st.fixed_dictionaries(
            {
                # unique as JSON sees it: {"name", "id"} and {"id", "name"} are one item (uniqueItems)
                "items": st.lists(
                    ITEM, min_size=1, max_size=4, unique_by=lambda item: orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
                ),
                "debug": st.none() | st.fixed_dictionaries({}, optional={"trace": st.text(max_size=3)}),
            }
        ),
        "total": st.integers(0, 2**63 - 1),
    },
    optional={"links": st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=2)},
)
POINTERS = st.lists(
    st.sampled_from(
        ["/data", "/data/items", "/data/items/name", "/data/items/id", "/data/items/1", "/data/items/0/owner",
         "/data/items/owner", "/data/debug", "/data/debug/trace", "/total", "/links", "/nope", "/data/items/5"]
    ),
    min_size=1,
    max_size=4,
)  # fmt: skip


def valid(value: Any, schema: Any) -> bool:
    validator = jsonschema.Draft202012Validator(schema, format_checker=None)
    return bool(validator.is_valid(value))


@settings(max_examples=150, derandomize=True, deadline=None, database=None)
@given(page=PAGE, pointers=POINTERS)
def test_every_filtered_result_validates_against_the_pruned_schema(page: dict[str, Any], pointers: list[str]) -> None:
    assert valid(page, SCHEMA)
    schema = pruned(pointers)
    if schema is None:
        return
    out = OutputFilter.from_spec({"jsonRetain": pointers}).apply(structured(page))
    assert valid(out.structured_content, schema)
    # a filter that fails returns the original, which the pruned schema accepts as well
    assert valid(page, schema)


# --- bad specs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (["/a"], "a mapping"),
        ({"jsonRetains": ["/a"]}, "unknown output filter key.*jsonRetains"),
        ({"jsonRetain": "/a"}, "jsonRetain must be a list"),
        ({"jsonRetain": ["/a", "b"]}, r"jsonRetain\[1\]: a JSON pointer starts with /"),
        ({"jsonRetain": ["/a~2b"]}, r"jsonRetain\[0\]: in a JSON pointer ~ is written ~0"),
        ({"jsonRetain": ["/a~"]}, r"jsonRetain\[0\]: in a JSON pointer ~ is written ~0"),
        ({"jsonRetain": [3]}, r"jsonRetain\[0\]: a JSON pointer is a string, not int"),
        ({"jsonPatches": {"op": "remove", "path": "/a"}}, "jsonPatches: must be a list of operations, not dict"),
        ({"jsonPatches": ["remove /a"]}, r"jsonPatches\[0\]: an operation is a mapping"),
        ({"jsonPatches": [{"op": "delete", "path": "/a"}]}, r"jsonPatches\[0\]: unknown op 'delete'.*remove"),
        ({"jsonPatches": [{"path": "/a"}]}, r"jsonPatches\[0\]: unknown op None"),
        ({"jsonPatches": [{"op": "remove"}]}, r"jsonPatches\[0\]\.path: the operation needs a path"),
        ({"jsonPatches": [{"op": "remove", "path": "a"}]}, r"jsonPatches\[0\]\.path: a JSON pointer starts with /"),
        ({"jsonPatches": [{"op": "remove", "path": ""}]}, r"jsonPatches\[0\]\.path: cannot remove the whole document"),
        (
            {"jsonPatches": [{"op": "remove", "path": "/a"}, {"op": "add", "path": "/b"}]},
            r"jsonPatches\[1\]: the add operation needs a value",
        ),
        ({"jsonPatches": [{"op": "test", "path": "/b"}]}, r"jsonPatches\[0\]: the test operation needs a value"),
        ({"jsonPatches": [{"op": "copy", "path": "/b"}]}, r"jsonPatches\[0\]\.from: the copy operation needs from"),
        (
            {"jsonPatches": [{"op": "move", "path": "/b", "from": "b"}]},
            r"jsonPatches\[0\]\.from: a JSON pointer starts",
        ),
        (
            {"jsonPatches": [{"op": "move", "from": "/a", "path": "/a/b"}]},
            r"cannot move '/a' into its own child '/a/b'",
        ),
        ({"convertToToon": "yes"}, "convertToToon must be true or false"),
    ],
)
def test_bad_specs_are_refused_with_a_message_naming_the_fault(spec: Any, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        OutputFilter.from_spec(spec)
