"""RFC 6902 JSON Patch: the RFC's examples, the same outcomes as the jsonpatch library, nothing given changed,
and a budget on what a patch adds that copies compounding one another cannot pass."""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apimcp.artifacts.errors import PlaceError
from apimcp.artifacts.json_patch import MAX_OPERATIONS, Patch, PatchFailed, json_equal, weight

BIG = 1 << 40


def patched(document: Any, operations: list[dict[str, Any]], budget: int = BIG) -> Any:
    return Patch.compile(operations).apply(document, budget)


# --- RFC 6902, appendix A ------------------------------------------------------------------------

RFC_EXAMPLES: list[tuple[str, Any, list[dict[str, Any]], Any]] = [
    ("A.1 add a member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
     {"baz": "qux", "foo": "bar"}),
    ("A.2 add an element", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
     {"foo": ["bar", "qux", "baz"]}),
    ("A.3 remove a member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ("A.4 remove an element", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}],
     {"foo": ["bar", "baz"]}),
    ("A.5 replace", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
     {"baz": "boo", "foo": "bar"}),
    ("A.6 move a value", {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ("A.7 move an element", {"foo": ["all", "grass", "cows", "eat"]},
     [{"op": "move", "from": "/foo/1", "path": "/foo/3"}], {"foo": ["all", "cows", "eat", "grass"]}),
    ("A.8 tests that hold", {"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ("A.10 add a nested object", {"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
     {"foo": "bar", "child": {"grandchild": {}}}),
    ("A.11 unknown members ignored", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
     {"foo": "bar", "baz": "qux"}),
    ("A.14 ~ escapes in order", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}],
     {"/": 9, "~1": 10}),
    ("A.16 add an array value", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
     {"foo": ["bar", ["abc", "def"]]}),
]  # fmt: skip
RFC_ERRORS: list[tuple[str, Any, list[dict[str, Any]]]] = [
    ("A.9 a test that fails", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),
    ("A.12 add under a missing member", {"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),
    ("A.15 strings are not numbers", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),
]


@pytest.mark.parametrize(("name", "document", "operations", "expected"), RFC_EXAMPLES, ids=[e[0] for e in RFC_EXAMPLES])
def test_the_rfc_examples(name: str, document: Any, operations: list[dict[str, Any]], expected: Any) -> None:
    assert patched(document, operations) == expected


@pytest.mark.parametrize(("name", "document", "operations"), RFC_ERRORS, ids=[e[0] for e in RFC_ERRORS])
def test_the_rfc_errors(name: str, document: Any, operations: list[dict[str, Any]]) -> None:
    with pytest.raises(PatchFailed, match=r"^\[0\] \("):
        patched(document, operations)


def test_the_whole_document_is_the_empty_pointer() -> None:
    assert patched({"a": 1}, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert patched({"a": 1}, [{"op": "add", "path": "", "value": 2}]) == 2
    assert patched({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": ""}]) == {"b": 1}
    assert patched({"a": 1}, [{"op": "test", "path": "", "value": {"a": 1.0}}]) == {"a": 1}


@pytest.mark.parametrize(
    ("first", "second", "equal"),
    [(1, 1.0, True), (True, 1, False), (0, False, False), ({"a": [1, "x"]}, {"a": [1.0, "x"]}, True),
     ({"a": 1}, {"a": 1, "b": 2}, False), ([1, 2], [2, 1], False), (None, None, True), ("1", 1, False)],
)  # fmt: skip
def test_tests_compare_as_json_does(first: Any, second: Any, equal: bool) -> None:
    assert json_equal(first, second) is equal
    assert json_equal(second, first) is equal


@pytest.mark.parametrize(
    ("document", "path"),
    [([1, 2], "/01"), ([1, 2], "/2"), ([1, 2], "/-"), ([1, 2], "/x"), ({"a": 1}, "/a/b"), ({"a": 1}, "/b")],
)
def test_paths_that_name_nothing_fail(document: Any, path: str) -> None:
    for operation in ({"op": "remove", "path": path}, {"op": "replace", "path": path, "value": 0}):
        with pytest.raises(PatchFailed):
            patched(document, [operation])


# --- the same outcomes as the jsonpatch library --------------------------------------------------

KEYS = st.sampled_from(["a", "b", "0", "1"])
SCALARS = st.none() | st.integers(-3, 3) | st.text("xy", max_size=2)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                    max_leaves=8)  # fmt: skip
POINTERS = st.lists(st.sampled_from(["a", "b", "0", "1", "2", "-", "01"]), max_size=3).map(
    lambda parts: "".join("/" + part for part in parts)
)
OPERATIONS = st.one_of(
    st.builds(lambda op, path, value: {"op": op, "path": path, "value": value},
              st.sampled_from(["add", "replace", "test"]), POINTERS, JSON),
    st.builds(lambda path: {"op": "remove", "path": path}, POINTERS),
    st.builds(lambda op, path, source: {"op": op, "path": path, "from": source},
              st.sampled_from(["move", "copy"]), POINTERS, POINTERS),
)  # fmt: skip


@settings(max_examples=400, derandomize=True, deadline=None, database=None)
@given(document=JSON, operations=st.lists(OPERATIONS, min_size=1, max_size=4))
def test_patches_do_what_the_jsonpatch_library_does(document: Any, operations: list[dict[str, Any]]) -> None:
    try:
        patch = Patch.compile(operations)
    except PlaceError:
        return  # refused before any document is seen (copies into themselves, removing the document)
    given_document = copy.deepcopy(document)
    try:
        expected: Any = jsonpatch.apply_patch(document, operations)
    except Exception:
        expected = PatchFailed
    try:
        got: Any = patch.apply(document, BIG)
    except PatchFailed:
        got = PatchFailed
    assert orjson.dumps(got) == orjson.dumps(expected) if expected is not PatchFailed else got is PatchFailed
    assert document == given_document  # nothing given is changed


# --- nothing given changes --------------------------------------------------------------------------


def test_neither_the_document_nor_the_patch_is_changed() -> None:
    document = {"rows": [{"id": 1, "tags": ["a"]}], "meta": {"n": 1}}
    given_document = copy.deepcopy(document)
    operations = [
        {"op": "add", "path": "/extra", "value": {"list": [1]}},
        {"op": "add", "path": "/extra/list/-", "value": 2},
        {"op": "copy", "from": "/rows/0", "path": "/first"},
        {"op": "add", "path": "/first/tags/-", "value": "b"},
        {"op": "replace", "path": "/meta/n", "value": 2},
        {"op": "move", "from": "/rows/0/tags", "path": "/tags"},
    ]
    patch = Patch.compile(operations)
    out = patch.apply(document, BIG)
    assert out == {
        "rows": [{"id": 1}],
        "meta": {"n": 2},
        "extra": {"list": [1, 2]},
        "first": {"id": 1, "tags": ["a", "b"]},
        "tags": ["a"],
    }
    assert document == given_document
    assert patch.apply(document, BIG) == out  # the patch's own values were not changed either
    assert out["meta"] is not document["meta"] and out["rows"][0] is not document["rows"][0]


def test_a_copy_of_a_changed_container_is_changed_apart_from_it() -> None:
    out = patched(
        {"a": {"n": 0}},
        [
            {"op": "add", "path": "/a/x", "value": 1},  # /a is now the run's own copy
            {"op": "copy", "from": "/a", "path": "/b"},
            {"op": "add", "path": "/b/y", "value": 2},
            {"op": "add", "path": "/a/z", "value": 3},
        ],
    )
    assert out == {"a": {"n": 0, "x": 1, "z": 3}, "b": {"n": 0, "x": 1, "y": 2}}


def test_a_patch_on_a_large_document_copies_only_its_path() -> None:
    rows = [{"id": n, "name": f"row {n}"} for n in range(20_000)]
    document = {"items": rows, "total": 20_000}
    out = patched(document, [{"op": "add", "path": "/note", "value": "shaped"}])
    assert out["items"] is rows and out["note"] == "shaped" and "note" not in document


# --- bounds ---------------------------------------------------------------------------------------


def test_weight_is_about_the_json_size_and_stops_past_its_limit() -> None:
    value = {"items": [{"id": 1, "name": "widget"}, None, True], "s": "x" * 100}
    assert len(orjson.dumps(value)) <= weight(value, BIG) <= 1.3 * len(orjson.dumps(value))
    shared: Any = ["x" * 10]
    for _ in range(60):
        shared = [shared, shared]  # 2**60 leaves, if walked
    assert 1000 < weight(shared, 1000) < 1100


def test_at_most_max_operations_operations() -> None:
    Patch.compile([{"op": "test", "path": "", "value": 1}] * MAX_OPERATIONS)
    with pytest.raises(PlaceError, match=f"at most {MAX_OPERATIONS} operations, not {MAX_OPERATIONS + 1}"):
        Patch.compile([{"op": "test", "path": "", "value": 1}] * (MAX_OPERATIONS + 1))


@pytest.mark.parametrize(("source", "path"), [("", "/x"), ("/a", "/a/b"), ("/a", "/a/-"), ("/a/0", "/a/0/b/c")])
def test_a_copy_into_itself_is_refused_naming_its_from(source: str, path: str) -> None:
    with pytest.raises(PlaceError, match="into itself") as refused:
        Patch.compile([{"op": "test", "path": "", "value": 1}, {"op": "copy", "from": source, "path": path}])
    assert refused.value.where == (1, "from")


def doubling_patch(times: int) -> list[dict[str, Any]]:
    """Operations doubling the document `times` times without copying an ancestor: copy /s beside itself,
    gather both halves under /s again (issue 21, H2, once copies of the root are refused)."""
    operations: list[dict[str, Any]] = [{"op": "add", "path": "/s", "value": {"id": 1, "name": "widget"}}]
    for _ in range(times):
        operations += [
            {"op": "copy", "from": "/s", "path": "/t"},
            {"op": "add", "path": "/u", "value": {}},
            {"op": "move", "from": "/s", "path": "/u/a"},
            {"op": "move", "from": "/t", "path": "/u/b"},
            {"op": "move", "from": "/u", "path": "/s"},
        ]
    return operations


def test_doubling_copies_fail_at_the_budget_without_building_the_document() -> None:
    patch = Patch.compile(doubling_patch(19))  # 2**19 widgets, if nothing stopped it
    budget = 64 * 1024
    tracemalloc.start()
    try:
        with pytest.raises(PatchFailed, match=f"would add more than {budget} bytes") as failed:
            patch.apply({}, budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the copy that fails is the one that would pass 64 KiB: the 11th (2**10 widgets of ~30 bytes, copied)
    assert str(failed.value).startswith("[51] (copy /t)")
    assert peak < 1024 * 1024
