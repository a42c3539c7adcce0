"""Merging the artifacts of an exposition: by key, first attached wins, and who declared each resource."""

from __future__ import annotations

from typing import Any

from apimcp.artifacts.bundle import merge


def _resources(*uris: str, templates: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "kind": "Resources",
        "document": {
            "resources": {uri: {"name": uri} for uri in uris},
            "resourceTemplates": {template: {"name": template} for template in templates},
        },
    }


def test_several_files_of_a_kind_merge_by_key_and_the_first_attached_wins() -> None:
    first = {"kind": "Prompts", "document": {"prompts": {"a": {"result": "first a"}, "b": {"result": "first b"}}}}
    second = {"kind": "Prompts", "document": {"prompts": {"b": {"result": "second b"}, "c": {"result": "second c"}}}}
    bundle = merge([[first, second]])
    assert {name: spec["result"] for name, spec in bundle.prompts.items()} == {
        "a": "first a",
        "b": "first b",
        "c": "second c",
    }
    assert list(bundle.prompts) == ["a", "b", "c"]


def test_each_kind_fills_its_own_sections() -> None:
    bundle = merge([[
        _resources("note://x", templates=("note://{id}",)),
        {"kind": "CustomTools", "document": {"customTools": {"t": {"tool": "op", "arguments": {}}}}},
        {"kind": "ToolsOutputFilters", "document": {"filters": {"op": {"convertToToon": True}}}},
    ]])  # fmt: skip
    assert list(bundle.resources) == ["note://x"]
    assert list(bundle.resource_templates) == ["note://{id}"]
    assert list(bundle.custom_tools) == ["t"]
    assert list(bundle.filters) == ["op"]
    assert not bundle.prompts
    assert not bundle.empty


def test_each_resource_and_template_keeps_the_member_that_declared_it() -> None:
    """The member whose backend a `file://` resource is read from: the first to declare it, as for every key."""
    bundle = merge([
        [_resources("file:///a", "file:///both", templates=("file:///a/{x}",))],
        [],
        [_resources("file:///c", "file:///both", templates=("file:///a/{x}", "file:///c/{x}"))],
    ])  # fmt: skip
    assert bundle.resource_members == {"file:///a": 0, "file:///both": 0, "file:///c": 2}
    assert bundle.template_members == {"file:///a/{x}": 0, "file:///c/{x}": 2}


def test_an_unknown_kind_is_ignored_and_nothing_is_empty() -> None:
    assert merge([[{"kind": "Workflows", "document": {"prompts": {"a": {"result": "x"}}}}]]).empty
    assert merge([]).empty
    assert merge([[], []]).empty
