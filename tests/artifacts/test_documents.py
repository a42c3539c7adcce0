"""Artifact documents: reShapr's four kinds read as written, and each refusal at the exact pointer."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
import yaml

from apimcp.artifacts.documents import (
    KINDS,
    ArtifactDocument,
    ArtifactError,
    check_against,
    find_target,
    read_document,
    schema_text,
)
from apimcp.artifacts.errors import pointer
from apimcp.catalog.model import Operation
from apimcp.importers.openapi import import_openapi
from apimcp.safety.yaml_loading import YamlLimits

FILES = Path(__file__).parent / "files"
ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "tests" / "gateway" / "echo_api.yaml"
SERVICE = ("Echo API", "2.1")


@cache
def operations() -> tuple[Operation, ...]:
    return import_openapi(str(ECHO)).operations


def example(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((FILES / name).read_text())
    return loaded


def read(document: dict[str, Any]) -> ArtifactDocument:
    return read_document(orjson.dumps(document), "test.json")


def refused(document: dict[str, Any] | bytes) -> ArtifactError:
    content = document if isinstance(document, bytes) else orjson.dumps(document)
    with pytest.raises(ArtifactError) as caught:
        read_document(content, "test.yaml")
    return caught.value


def changed(name: str, change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    document = example(name)
    change(document)
    return document


# --- the four kinds, as written --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "capabilities"),
    [
        ("prompts.yaml", "Prompts", ("summarize-item", "house-rules")),
        (
            "resources.yaml",
            "Resources",
            (
                "file:///docs/readme.md",
                "file:///docs/logo.png",
                "ui://items/viewer.html",
                "file:///items/{itemId}{?verbose}",
            ),
        ),
        ("custom-tools.yaml", "CustomTools", ("show_item", "rename_twice")),
        ("filters.yaml", "ToolsOutputFilters", ("get_item", "show_item")),
    ],
)
def test_each_kind_is_read_with_what_it_declares(name: str, kind: str, capabilities: tuple[str, ...]) -> None:
    document = read_document((FILES / name).read_bytes(), name)
    assert (document.kind, document.api_version) == (kind, "reshapr.io/v1alpha1")
    assert (document.service_name, document.service_version) == SERVICE
    assert document.capabilities == capabilities
    assert document.body == example(name)  # plain JSON data, as written
    check_against(document, operations(), ("show_item",), service=SERVICE)


def test_apimcp_s_own_api_version_and_json_are_read_the_same() -> None:
    document = example("prompts.yaml") | {"apiVersion": "apimcp.dev/v1alpha1"}
    read_back = read_document(json.dumps(document, indent=2).encode(), "prompts.json")
    assert read_back.api_version == "apimcp.dev/v1alpha1"
    assert read_back.body == document


def test_only_templates_make_a_resources_file() -> None:
    document = changed("resources.yaml", lambda d: d.pop("resources"))
    assert read(document).capabilities == ("file:///items/{itemId}{?verbose}",)


# --- refusals, each at its pointer -----------------------------------------------------------------


def _refusal_cases() -> list[tuple[str, dict[str, Any] | bytes, str, str]]:
    """(case, document, pointer, words of the problem)."""

    def tool(**fields: Any) -> dict[str, Any]:
        base = {"description": "d", "input": {"type": "object", "properties": {"id": {"type": "string"}}}}
        return changed("custom-tools.yaml", lambda d: d.update(customTools={"mine": base | fields}))

    script = {"script": "return 1;", "tools": [{"tool": "get_item"}]}
    return [
        ("missing kind", changed("prompts.yaml", lambda d: d.pop("kind")), "/kind",
         "the kind is missing; artifacts are one of Prompts, Resources, CustomTools, ToolsOutputFilters"),
        ("unknown kind", changed("prompts.yaml", lambda d: d.update(kind="Overlay")), "/kind",
         '"Overlay", which is not a kind'),
        ("wrong apiVersion", changed("prompts.yaml", lambda d: d.update(apiVersion="reshapr.io/v1")),
         "/apiVersion", '"reshapr.io/v1" is not one of "reshapr.io/v1alpha1", "apimcp.dev/v1alpha1"'),
        ("not a mapping", b"- a\n- b\n", "", "an artifact is a YAML or JSON mapping"),
        ("not YAML", b"kind: [unclosed\n", "", "test.yaml: not valid JSON or YAML (line 2, column 1)"),
        ("unquoted version", changed("prompts.yaml", lambda d: d["service"].update(version=2.1)),
         "/service/version", "the value is a number (2.1), expected a string (quote it in YAML)"),
        ("unknown field", changed("prompts.yaml", lambda d: d["prompts"]["house-rules"].update(titel="x")),
         "/prompts/house-rules/titel", "unknown field (expected title, description, arguments, result)"),
        ("missing result", changed("prompts.yaml", lambda d: d["prompts"]["house-rules"].pop("result")),
         "/prompts/house-rules", "result is required"),
        ("argument twice", changed("prompts.yaml", lambda d: d["prompts"]["summarize-item"]["arguments"].append(
            {"name": "tone"})), "/prompts/summarize-item/arguments/2/name", "the argument 'tone' is declared twice"),
        ("unknown prompt placeholder",
         changed("prompts.yaml", lambda d: d["prompts"]["house-rules"].update(result="Hi ${user}")),
         "/prompts/house-rules/result", "${user} names no argument: it declares no arguments"),
        ("text and blob", changed("resources.yaml", lambda d: d["resources"]["file:///docs/readme.md"].update(
            blob="aGk=")), "/resources/file:~1~1~1docs~1readme.md/blob",
         "a resource has at most one of text, blob and remoteContent"),
        ("blob and remoteContent", changed("resources.yaml", lambda d: d["resources"]["file:///docs/logo.png"].update(
            remoteContent="https://x.example/a")), "/resources/file:~1~1~1docs~1logo.png/remoteContent",
         "a resource has at most one of text, blob and remoteContent"),
        ("tools on a file resource", changed("resources.yaml", lambda d: d["resources"]["file:///docs/logo.png"]
            .update(tools=["get_item"])), "/resources/file:~1~1~1docs~1logo.png/tools", "unknown field"),
        ("bad blob", changed("resources.yaml", lambda d: d["resources"]["file:///docs/logo.png"].update(
            blob="not base64!")), "/resources/file:~1~1~1docs~1logo.png/blob", "blob is not base64"),
        ("remote content not http", changed("resources.yaml", lambda d: d["resources"]["ui://items/viewer.html"]
            .update(remoteContent="file:///etc/passwd")), "/resources/ui:~1~1items~1viewer.html/remoteContent",
         "remoteContent is an http:// or https:// URL"),
        # a size past what JSON numbers hold exactly became an integer resources/list could not write
        ("size too large", changed("resources.yaml", lambda d: d["resources"]["file:///docs/readme.md"].update(
            size=1.5e300)), "/resources/file:~1~1~1docs~1readme.md/size", "9007199254740991"),
        ("priority above 1", changed("resources.yaml", lambda d: d["resources"]["file:///docs/readme.md"]
            ["annotations"].update(priority=2)), "/resources/file:~1~1~1docs~1readme.md/annotations/priority",
         "2 is above the maximum, 1"),
        ("no section", changed("resources.yaml", lambda d: (d.pop("resources"), d.pop("resourceTemplates"))), "",
         "needs resources or resourceTemplates"),
        ("bad template", changed("resources.yaml", lambda d: d.update(resourceTemplates={"file:///{a": {"name": "n"}})),
         "/resourceTemplates/file:~1~1~1{a", "not an RFC 6570 template: the expression at position 8 is not closed"),
        ("touching expressions", changed("resources.yaml", lambda d: d.update(resourceTemplates={
            "x://{a}{b}": {"name": "n"}})), "/resourceTemplates/x:~1~1{a}{b}", "{a} and {b} touch"),
        ("completion of no variable", changed("resources.yaml", lambda d: d["resourceTemplates"]
            ["file:///items/{itemId}{?verbose}"]["completions"].update(size=["1"])),
         "/resourceTemplates/file:~1~1~1items~1{itemId}{?verbose}/completions/size",
         "the template has no variable 'size' (its variables: itemId, verbose)"),
        ("scripted and declarative", tool(tool="get_item", arguments={}, **script), "/customTools/mine/tool",
         "a scripted custom tool has script and tools (the tools it calls), and no tool or arguments"),
        ("script without tools", tool(script="return 1;"), "/customTools/mine",
         "a scripted custom tool has script and tools"),
        ("neither form", tool(), "/customTools/mine",
         "a custom tool is declarative (tool and arguments) or scripted (script and tools)"),
        ("declarative without arguments", tool(tool="get_item"), "/customTools/mine", "a custom tool is declarative"),
        ("bad tool name", changed("custom-tools.yaml", lambda d: d["customTools"].update(
            {"show item": d["customTools"]["show_item"]})), "/customTools/show item",
         "a tool name is 1 to 64 letters, digits, '_', '.' or '-'"),
        ("unknown placeholder", tool(tool="get_item", arguments={"itemId": "${item.key}"}),
         "/customTools/mine/arguments/itemId",
         "${item.key} names no property of the tool's input (its properties: id)"),
        ("unknown nested placeholder", tool(tool="get_item", arguments={"a": {"b": "${ nope }"}}),
         "/customTools/mine/arguments/a/b", "${ nope } names no property"),
        ("input not an object", tool(tool="get_item", arguments={}, input={"type": "string"}),
         "/customTools/mine/input/type", '"string" is not "object"'),
        ("input not a schema", tool(tool="get_item", arguments={}, input={"type": "object", "minProperties": -1}),
         "/customTools/mine/input/minProperties", "not a valid JSON Schema: -1 is less than the minimum of 0"),
        ("input reaching out", tool(tool="get_item", arguments={}, input={
            "type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}}),
         "/customTools/mine/input/properties/a/$ref", "references stay inside the input"),
        ("script service not Name:version", tool(script="return 1;", tools=[{"tool": "x", "service": "Weather"}]),
         "/customTools/mine/tools/0/service", "service names another service as Name:version"),
        ("bad pointer", changed("filters.yaml", lambda d: d["filters"]["get_item"].update(jsonRetain=["/a~2b"])),
         "/filters/get_item/jsonRetain/0", "in a JSON pointer ~ is written ~0 and / inside a name ~1"),
        ("pointer without slash", changed("filters.yaml", lambda d: d["filters"]["get_item"].update(
            jsonRetain=["method"])), "/filters/get_item/jsonRetain/0", "a JSON pointer starts with /"),
        ("patch without value", changed("filters.yaml", lambda d: d["filters"]["get_item"].update(
            jsonPatches=[{"op": "replace", "path": "/a"}])), "/filters/get_item/jsonPatches/0", "value is required"),
        ("patch with a bad from", changed("filters.yaml", lambda d: d["filters"]["get_item"].update(
            jsonPatches=[{"op": "copy", "path": "/a", "from": "b"}])), "/filters/get_item/jsonPatches/0/from",
         "a JSON pointer starts with /"),
        ("empty filter", changed("filters.yaml", lambda d: d["filters"].update(get_item={})), "/filters/get_item",
         "needs jsonRetain or jsonPatches or convertToToon"),
        ("no filters", changed("filters.yaml", lambda d: d.update(filters={})), "/filters", "needs at least 1 entry"),
        ("integer key", b"apiVersion: reshapr.io/v1alpha1\nkind: Prompts\nservice: {name: a, version: '1'}\n"
         b"prompts: {1: {result: x}}\n", "/prompts/1", "keys are strings; quote 1 in YAML"),
    ]  # fmt: skip


@pytest.mark.parametrize(("document", "path", "problem"), [case[1:] for case in _refusal_cases()],
                         ids=[case[0] for case in _refusal_cases()])  # fmt: skip
def test_refusals_name_the_pointer_and_the_problem(document: dict[str, Any] | bytes, path: str, problem: str) -> None:
    error = refused(document)
    assert error.path == path
    assert problem in error.problem
    assert str(error) == f"{path or '(document)'}: {error.problem}"


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("file://@127.0.0.1:9999/steal", "write file:///path (nothing may come between file:// and /)"),
        ("file://.evil.example/x", "write file:///path"),
        ("file://%40127.0.0.1:9999/x", "write file:///path"),
        ("file://backend.example/x", "write file:///path"),
        ("file:////evil.example/x", "// would begin another host"),
        ("file:///%2F%2Fevil.example/x", "// would begin another host (once percent-decoded)"),
        ("file:///%252f%252fevil.example/x", "// would begin another host (once percent-decoded)"),
        ("file:///\\evil.example/x", "holds no backslash"),
        ("file:///%5Cevil.example/x", "holds no backslash (once percent-decoded)"),
        ("file:///docs/../secrets", "no . or .. segment"),
        ("file:///docs/%2e%2E/secrets", "no . or .. segment"),
        ("file:///docs/a%0d%0aHost:%20evil", "no control character (once percent-decoded)"),
        ("file:///docs/%25252525252F", "percent-encoded more than 3 times over"),
    ],
)
def test_a_file_resource_that_could_leave_the_backend_is_refused_when_attached(uri: str, problem: str) -> None:
    """Finding H1: what follows file:// was appended to the backend URL, so it could name another host."""
    error = refused(changed("resources.yaml", lambda d: d["resources"].update({uri: {"name": "stolen"}})))
    assert error.path == pointer(["resources", uri])
    assert problem in error.problem


DOT_SEGMENT_IN_DISGUISE = [
    ("file:///docs/..;/admin", "no . or .. segment"),  # Tomcat and Spring: `..;` is `..`
    ("file:///docs/..;jsessionid=x/admin", "no . or .. segment"),
    ("file:///docs/.;/admin", "no . or .. segment"),
    ("file:///docs/%2e%2e;/admin", "no . or .. segment: it stays under the backend's base path (once percent-decoded)"),
    ("file:///docs/..%3B/admin", "no . or .. segment: it stays under the backend's base path (once percent-decoded)"),
    (
        "file:///docs/\uff0e\uff0e/admin",
        "no . or .. segment: it stays under the backend's base path (once NFKC-normalized",
    ),
    ("file:///docs/%EF%BC%8E%EF%BC%8E/admin", "(once NFKC-normalized, as some servers do"),
    ("file:///docs/\uff0e\uff0e\uff0fadmin", "no character that NFKC normalization makes /"),
    ("file:///docs/a\uff3cb", "holds no backslash (once NFKC-normalized"),
    ("file:///docs/.. /admin", "no segment of dots and spaces only"),  # Windows servers drop the space
    (
        "file:///docs/..%20/admin",
        "no segment of dots and spaces only: some servers read it as .. (once percent-decoded)",
    ),
    ("file:///docs/.../admin", "no segment of dots and spaces only"),
    ("file:///docs/%u002e%u002e/admin", "no %u escape: IIS decodes %u002e as ."),
    ("file:///docs/a%2Fb", "no percent-encoded / or \\ (%2F, %5C): servers differ on whether it ends a segment"),
    ("file:///docs/a%2fb", "no percent-encoded / or \\ (%2F, %5C)"),
    ("file:///docs/a%252Fb", "no percent-encoded / or \\ (%2F, %5C)"),
]
"""Issue 21, L4: paths the check let through that servers read with a `..` segment, or cut elsewhere."""


@pytest.mark.parametrize(("uri", "problem"), DOT_SEGMENT_IN_DISGUISE)
def test_a_file_path_servers_read_with_a_dot_segment_is_refused_when_attached(uri: str, problem: str) -> None:
    error = refused(changed("resources.yaml", lambda d: d["resources"].update({uri: {"name": "stolen"}})))
    assert error.path == pointer(["resources", uri])
    assert problem in error.problem


def test_paths_with_dots_parameters_and_letters_beyond_ascii_are_still_attached() -> None:
    plain = [
        "file:///docs/v1.2/notes.md",
        "file:///docs/a;b/c",
        "file:///docs/caf\u00e9.md",
        "file:///docs/%C3%A9t%C3%A9",
    ]
    document = read(changed("resources.yaml", lambda d: d["resources"].update({uri: {"name": uri} for uri in plain})))
    assert set(plain) <= set(document.capabilities)


def test_a_file_template_must_write_the_path_s_slash_itself() -> None:
    """Finding H1: with `file://{+rest}` any client chose the host the plan's credentials went to."""
    error = refused(changed("resources.yaml", lambda d: d.update(resourceTemplates={"file://{+rest}": {"name": "x"}})))
    assert error.path == "/resourceTemplates/file:~1~1{+rest}"
    assert "a file:// template starts with file:///" in error.problem


def test_other_file_uris_are_kept_when_they_are_not_read_from_the_backend() -> None:
    inline = {"file://host/a.txt": {"name": "a", "text": "inline"}, "file:///users/@me?x=..": {"name": "me"}}
    document = read(changed("resources.yaml", lambda d: d["resources"].update(inline)))
    assert set(inline) <= set(document.capabilities)


def test_an_output_filter_copying_the_document_into_itself_is_refused_when_attached() -> None:
    # issue 21, H2: N copies of "" each doubled the document; a copy of an ancestor of its path does the same
    for source, path in (("", "/x0"), ("/data", "/data/again")):
        patches = [{"op": "add", "path": "/data", "value": {}}, {"op": "copy", "from": source, "path": path}]
        error = refused(changed("filters.yaml", lambda d, p=patches: d["filters"]["get_item"].update(jsonPatches=p)))
        assert error.path == "/filters/get_item/jsonPatches/1/from"
        assert "into itself" in error.problem and path in error.problem


def test_an_output_filter_is_bounded_in_operations_and_pointers_when_attached() -> None:
    many = [{"op": "test", "path": "/a", "value": 1}] * 101
    error = refused(changed("filters.yaml", lambda d: d["filters"]["get_item"].update(jsonPatches=many)))
    assert (error.path, error.problem) == ("/filters/get_item/jsonPatches", "at most 100 operations, not 101")
    pointers = [f"/p{n}" for n in range(101)]
    error = refused(changed("filters.yaml", lambda d: d["filters"]["get_item"].update(jsonRetain=pointers)))
    assert (error.path, error.problem) == ("/filters/get_item/jsonRetain", "at most 100 pointers, not 101")
    diagonal = ["/" + "/".join("0" if column == row else "a" for column in range(16)) for row in range(16)]
    error = refused(changed("filters.yaml", lambda d: d["filters"]["get_item"].update(jsonRetain=diagonal)))
    assert error.path == "/filters/get_item/jsonRetain" and "more than 10000 branches" in error.problem
    deep = "/a" * 65
    error = refused(changed("filters.yaml", lambda d: d["filters"]["get_item"].update(jsonRetain=["/b", deep])))
    assert (error.path, error.problem) == (
        "/filters/get_item/jsonRetain/1",
        "a JSON pointer here has at most 64 segments, not 65",
    )


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    with pytest.raises(ArtifactError, match="expands to more than"):
        read_document("\n".join(lines).encode(), "bomb.yaml", YamlLimits(max_expanded_size=1 << 20))


def test_depth_is_bounded_in_json_too() -> None:
    with pytest.raises(ArtifactError, match="deeper than"):
        read_document(b"[" * 50 + b"]" * 50, "deep.json", YamlLimits(max_depth=20))


def test_a_refused_value_is_never_dumped_whole() -> None:
    big = "x" * 10_000
    error = refused(changed("prompts.yaml", lambda d: d.update(kind="Prompts", apiVersion=big)))
    assert error.path == "/apiVersion" and len(str(error)) < 200


# --- against the service ---------------------------------------------------------------------------


def _against(document: dict[str, Any], extra: tuple[str, ...] = ()) -> ArtifactError:
    with pytest.raises(ArtifactError) as caught:
        check_against(read(document), operations(), extra, service=SERVICE)
    return caught.value


def test_the_service_must_be_the_one_it_is_attached_to() -> None:
    error = _against(changed("prompts.yaml", lambda d: d["service"].update(version="3.0")))
    assert (error.path, error.problem) == (
        "/service",
        "the file is for Echo API 3.0, not Echo API 2.1: fix service.name and service.version",
    )


@pytest.mark.parametrize(
    ("name", "change", "path"),
    [
        (
            "custom-tools.yaml",
            lambda d: d["customTools"]["show_item"].update(tool="GET /nowhere"),
            "/customTools/show_item/tool",
        ),
        (
            "custom-tools.yaml",
            lambda d: d["customTools"]["rename_twice"]["tools"][0].update(tool="rename"),
            "/customTools/rename_twice/tools/0/tool",
        ),
        ("filters.yaml", lambda d: d["filters"].update(not_a_tool={"convertToToon": True}), "/filters/not_a_tool"),
        (
            "resources.yaml",
            lambda d: d["resources"]["ui://items/viewer.html"]["tools"].append("ghost"),
            "/resources/ui:~1~1items~1viewer.html/tools/2",
        ),
    ],
    ids=["declarative target", "script tool", "filter key", "ui binding"],
)
def test_every_tool_reference_must_resolve(name: str, change: Callable[[dict[str, Any]], object], path: str) -> None:
    error = _against(changed(name, change), ("show_item",))
    assert error.path == path
    assert "is no " in error.problem and "of the service" in error.problem


def test_filters_and_ui_bindings_may_name_custom_tools_of_other_artifacts() -> None:
    for name in ("filters.yaml", "resources.yaml"):
        with pytest.raises(ArtifactError, match="'show_item' is no tool"):
            check_against(read(example(name)), operations(), service=SERVICE)
        check_against(read(example(name)), operations(), ["show_item"], service=SERVICE)


def test_cross_service_script_tools_are_not_checked_here() -> None:
    document = read(example("custom-tools.yaml"))
    assert document.body["customTools"]["rename_twice"]["tools"][2]["service"] == "Weather API:1.0"
    check_against(document, operations(), service=SERVICE)


def test_a_custom_tool_may_not_take_another_operation_s_name() -> None:
    document = changed("custom-tools.yaml", lambda d: d["customTools"].update(
        delete_item=d["customTools"].pop("rename_twice")))  # fmt: skip
    error = _against(document)
    assert (error.path, error.problem) == (
        "/customTools/delete_item",
        "delete_item is already the tool of DELETE /items/{itemId}; give the custom tool another name",
    )
    replacing = changed(
        "custom-tools.yaml", lambda d: d.update(customTools={"get_item": d["customTools"]["show_item"]})
    )
    check_against(read(replacing), operations(), service=SERVICE)  # it replaces its own target


def test_declarative_tools_may_not_call_each_other_in_a_loop() -> None:
    def loop(document: dict[str, Any]) -> None:
        tools = document["customTools"]
        tools["a"] = tools["show_item"] | {"tool": "b"}
        tools["b"] = tools["show_item"] | {"tool": "a"}

    error = _against(changed("custom-tools.yaml", loop))
    assert (error.path, error.problem) == ("/customTools/a/tool", "the tools call each other: a -> b -> a")
    itself = _against(changed("custom-tools.yaml", lambda d: d["customTools"]["show_item"].update(tool="show_item")))
    assert itself.path == "/customTools/show_item/tool"


@pytest.mark.parametrize(
    ("reference", "tool_name"),
    [("get_item", "get_item"), ("getItem", "get_item"), ("GET /items/{itemId}", "get_item"),
     ("get /items/{itemId}", "get_item"), ("delete  /items/{itemId} ", "delete_item"), ("GET /items", None),
     ("", None)],
)  # fmt: skip
def test_targets_are_found_by_tool_name_operation_id_or_signature(reference: str, tool_name: str | None) -> None:
    found = find_target(reference, operations())
    assert (found.tool_name if found else None) == tool_name


# --- schemas and docs ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_each_shipped_schema_is_json_schema_2020_12(kind: str) -> None:
    schema = json.loads(schema_text(kind))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["kind"] == {"const": kind}
    assert schema["additionalProperties"] is False


def test_the_examples_are_valid_for_other_validators_too() -> None:
    """The schemas say what apimcp checks: python-jsonschema agrees on every example file."""
    for path in sorted(FILES.glob("*.yaml")):
        document = example(path.name)
        jsonschema.Draft202012Validator(json.loads(schema_text(document["kind"]))).validate(document)


def test_the_docs_describe_every_kind_and_link_every_schema() -> None:
    text = (ROOT / "docs" / "artifacts.md").read_text()
    assert re.search(r"^## Artifact files$", text, re.MULTILINE)
    for kind in KINDS:
        assert re.search(rf"^#### {kind}$", text, re.MULTILINE), kind
        assert f"src/apimcp/artifacts/schemas/{kind}.json" in text, kind


def test_pointers_escape_slashes_and_tildes() -> None:
    assert pointer(["resources", "ui://a/b~c", "tools", 0]) == "/resources/ui:~1~1a~1b~0c/tools/0"
