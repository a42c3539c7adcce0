"""Merging the artifacts of an exposition: by key, first attached wins."""

from __future__ import annotations

from apimcp.artifacts.bundle import merge


def test_several_files_of_a_kind_merge_by_key_and_the_first_attached_wins() -> None:
    first = {"kind": "Prompts", "document": {"prompts": {"a": {"result": "first a"}, "b": {"result": "first b"}}}}
    second = {"kind": "Prompts", "document": {"prompts": {"b": {"result": "second b"}, "c": {"result": "second c"}}}}
    bundle = merge([first, second])
    assert {name: spec["result"] for name, spec in bundle.prompts.items()} == {
        "a": "first a",
        "b": "first b",
        "c": "second c",
    }
    assert list(bundle.prompts) == ["a", "b", "c"]


def test_each_kind_fills_its_own_sections() -> None:
    bundle = merge(
        [
            {
                "kind": "Resources",
                "document": {
                    "resources": {"note://x": {"name": "x", "text": "t"}},
                    "resourceTemplates": {"note://{id}": {"name": "n"}},
                },
            },
            {"kind": "CustomTools", "document": {"customTools": {"t": {"tool": "op", "arguments": {}}}}},
            {"kind": "ToolsOutputFilters", "document": {"filters": {"op": {"convertToToon": True}}}},
        ]
    )
    assert list(bundle.resources) == ["note://x"]
    assert list(bundle.resource_templates) == ["note://{id}"]
    assert list(bundle.custom_tools) == ["t"]
    assert list(bundle.filters) == ["op"]
    assert not bundle.prompts
    assert not bundle.empty


def test_an_unknown_kind_is_ignored_and_nothing_is_empty() -> None:
    assert merge([{"kind": "Workflows", "document": {"prompts": {"a": {"result": "x"}}}}]).empty
    assert merge([]).empty
