"""What the schemas cannot say about one artifact document, checked once the schema holds.

Every placeholder names something that exists (an input property of a declarative custom tool, an
argument of a prompt), every JSON pointer is well formed, every output filter compiles as the gateway
will compile it (no copy of a document into itself, operations and pointers within their bounds),
resource templates are RFC 6570, inline blobs are base64, a `file://` resource read from the backend
names a plain path there (and a `file://` template starts with `file:///`), and a custom tool's input
is a JSON Schema the gateway can compile without reaching anything outside the document
(jsonschema_rs would fetch a remote `$ref`, or read a `file:` one, while compiling).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema_rs

from apimcp.artifacts.declarative import placeholder_path
from apimcp.artifacts.errors import ArtifactError, pointer
from apimcp.artifacts.file_paths import file_path, file_path_problem, file_template_problem
from apimcp.artifacts.output_filters import FilterError, OutputFilter
from apimcp.artifacts.uri_templates import UriTemplate
from apimcp.safety.schema_compiling import outside

_RESULT_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_META_SCHEMAS = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


def check(kind: str, body: Mapping[str, Any]) -> None:
    _CHECKS[kind](body)


def _prompts(body: Mapping[str, Any]) -> None:
    for name, prompt in body["prompts"].items():
        declared: list[str] = []
        for index, argument in enumerate(prompt.get("arguments", ())):
            if argument["name"] in declared:
                where = pointer(["prompts", name, "arguments", index, "name"])
                raise ArtifactError(where, f"the argument {argument['name']!r} is declared twice")
            declared.append(argument["name"])
        for found in _RESULT_PLACEHOLDER.finditer(prompt["result"]):
            if found.group(1) not in declared:
                known = f"its arguments are {', '.join(declared)}" if declared else "it declares no arguments"
                raise ArtifactError(
                    pointer(["prompts", name, "result"]), f"{found.group(0)} names no argument: {known}"
                )


def _resources(body: Mapping[str, Any]) -> None:
    for uri, resource in body.get("resources", {}).items():
        path = file_path(uri)
        if path is not None and not {"text", "blob", "remoteContent"} & resource.keys():
            problem = file_path_problem(path)
            if problem is not None:
                raise ArtifactError(pointer(["resources", uri]), problem)
        blob = resource.get("blob")
        if blob is not None:
            try:
                base64.b64decode("".join(blob.split()), validate=True)
            except (binascii.Error, ValueError):
                raise ArtifactError(pointer(["resources", uri, "blob"]), "blob is not base64") from None
    for uri, template in body.get("resourceTemplates", {}).items():
        variables = _template_variables(uri)
        problem = file_template_problem(uri)
        if problem is not None:
            raise ArtifactError(pointer(["resourceTemplates", uri]), problem)
        for variable in template.get("completions", {}):
            if variable not in variables:
                listed = ", ".join(variables) or "none"
                where = pointer(["resourceTemplates", uri, "completions", variable])
                raise ArtifactError(where, f"the template has no variable {variable!r} (its variables: {listed})")


def _template_variables(uri: str) -> tuple[str, ...]:
    try:
        return UriTemplate.parse(uri).variables
    except ValueError as exc:
        problem = str(exc).removeprefix(f"URI template {uri!r}: ")
        raise ArtifactError(pointer(["resourceTemplates", uri]), f"not an RFC 6570 template: {problem}") from None


def _custom_tools(body: Mapping[str, Any]) -> None:
    for name, tool in body["customTools"].items():
        _input_schema(tool["input"], ["customTools", name, "input"])
        if "arguments" in tool:
            _placeholders(tool["arguments"], tool["input"], ["customTools", name, "arguments"])


def _input_schema(schema: Mapping[str, Any], where: list[str | int]) -> None:
    _local_references_only(schema, where)
    try:
        jsonschema_rs.Draft202012Validator(dict(schema), retriever=outside)
    except jsonschema_rs.ValidationError as exc:
        inside = [*where, *exc.instance_path]
        raise ArtifactError(pointer(inside), f"not a valid JSON Schema: {exc.message.splitlines()[0]}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise ArtifactError(pointer(where), f"not a valid JSON Schema: {str(exc).splitlines()[0]}") from None


def _local_references_only(node: Any, where: list[str | int]) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _local_references_only(item, [*where, index])
        return
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        if isinstance(value, str):  # a keyword (a property named "$ref" has a schema, not a string, as value)
            if key in _REFERENCES and not value.startswith("#"):
                raise ArtifactError(pointer([*where, key]), "references stay inside the input (#/$defs/...)")
            if key == "$id":
                raise ArtifactError(pointer([*where, key]), "$id is not supported in a tool's input")
            if key == "$schema" and value not in _META_SCHEMAS:
                raise ArtifactError(pointer([*where, key]), f"the input is JSON Schema 2020-12 ({_META_SCHEMAS[0]})")
        _local_references_only(value, [*where, key])


def _placeholders(arguments: Mapping[str, Any], schema: Mapping[str, Any], where: list[str | int]) -> None:
    """Whole-value placeholders in nested mappings (what the gateway replaces) must name declared input."""
    for key, value in arguments.items():
        if isinstance(value, Mapping):
            _placeholders(value, schema, [*where, key])
            continue
        path = placeholder_path(value)
        if path is not None and not _declares(schema, path, schema):
            declared = ", ".join(schema.get("properties", {})) or "none"
            raise ArtifactError(
                pointer([*where, key]),
                f"{value} names no property of the tool's input (its properties: {declared})",
            )


def _declares(schema: Any, path: tuple[str, ...], root: Mapping[str, Any]) -> bool:
    """Whether `schema` declares the property `path` leads to, following references inside the input."""
    for step in path:
        schema = _resolved(schema, root)
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if not isinstance(properties, Mapping) or step not in properties:
            return False
        schema = properties[step]
    return True


def _resolved(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(32):  # a chain of references; a loop of them declares nothing
        reference = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(reference, str) or not reference.startswith("#/"):
            return schema
        target: Any = root
        for raw in reference[2:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, Mapping) else None
        schema = target
    return None


def _filters(body: Mapping[str, Any]) -> None:
    """Each filter compiles as the gateway compiles it: pointers, operations, and their bounds."""
    for name, spec in body["filters"].items():
        try:
            OutputFilter.from_spec(spec)
        except FilterError as exc:
            raise ArtifactError(pointer(["filters", name, *exc.where]), exc.problem) from None


_CHECKS: Mapping[str, Callable[[Mapping[str, Any]], None]] = {
    "Prompts": _prompts,
    "Resources": _resources,
    "CustomTools": _custom_tools,
    "ToolsOutputFilters": _filters,
}
