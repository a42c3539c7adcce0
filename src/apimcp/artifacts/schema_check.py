"""The JSON Schema of each artifact kind, shipped in `schemas/`, and its first error told in plain words.

The schemas are published (editors validate files with them), so what they say is what apimcp checks.
A validator is compiled once per kind, the first time a document of that kind is read. Errors are
reported at the most precise pointer (the unknown field, the bad key), with the schema's own
`errorMessage` when the failing part has one (the convention editors also follow), and never with a
dump of a large value.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsonschema_rs
import orjson

from apimcp.artifacts.errors import ArtifactError, pointer

KINDS = ("Prompts", "Resources", "CustomTools", "ToolsOutputFilters")


@functools.cache
def schema_text(kind: str) -> bytes:
    """The published JSON Schema of `kind`, as shipped."""
    if kind not in KINDS:
        raise KeyError(kind)
    return importlib.resources.files("apimcp.artifacts").joinpath("schemas").joinpath(f"{kind}.json").read_bytes()


@functools.cache
def schema(kind: str) -> Mapping[str, Any]:
    loaded: dict[str, Any] = orjson.loads(schema_text(kind))
    return loaded


@functools.cache
def _validator(kind: str) -> Any:
    return jsonschema_rs.Draft202012Validator(dict(schema(kind)), validate_formats=True)


def validate(kind: str, document: Mapping[str, Any]) -> None:
    """Raise ArtifactError for the first way `document` breaks the schema of `kind`."""
    first = next(iter(_validator(kind).iter_errors(document)), None)
    if first is not None:
        raise _explained(first, schema(kind))


def _explained(error: Any, root: Mapping[str, Any]) -> ArtifactError:
    path: list[str | int] = list(error.instance_path)
    kind = type(error.kind).__name__
    details = error.kind.as_dict()
    if kind == "PropertyNames":  # the key itself is at fault: point at it
        inner = details["error"]
        return ArtifactError(pointer([*path, inner.instance]), _message(inner, root, "key"))
    if kind in ("AdditionalProperties", "UnevaluatedProperties"):
        unexpected = details["unexpected"]
        known = _known_fields(_at(root, error.schema_path[:-1]), root)
        listed = f" (expected {', '.join(known)})" if known else ""
        return ArtifactError(pointer([*path, unexpected[0]]), f"unknown field{listed}")
    return ArtifactError(pointer(path), _message(error, root, "value"))


def _message(error: Any, root: Mapping[str, Any], what: str) -> str:
    kind = type(error.kind).__name__
    details = error.kind.as_dict()
    schema_path: Sequence[str | int] = error.schema_path
    holder_path = schema_path[:-2] if kind == "FalseSchema" and len(schema_path) >= 2 else schema_path[:-1]
    holder = _at(root, holder_path)
    if isinstance(holder, Mapping) and isinstance(holder.get("errorMessage"), str):
        return str(holder["errorMessage"])
    instance = error.instance
    if kind == "Required":
        return f"{details['property']} is required"
    if kind == "Type":
        types = details["types"] if isinstance(details["types"], list) else [details["types"]]
        quote = types == ["string"] and isinstance(instance, int | float | bool)
        hint = " (quote it in YAML)" if quote else ""
        return f"the {what} is {_describe(instance)}, expected {' or '.join(map(_article, types))}{hint}"
    if kind == "Enum":
        return f"{_short(instance)} is not one of {', '.join(_short(o) for o in details['options'])}"
    if kind == "Constant":
        return f"{_short(instance)} is not {_short(details['expected_value'])}"
    if kind == "FalseSchema":
        return f"{schema_path[-1]} is not allowed here"
    if kind in ("AnyOf", "OneOfNotValid"):
        needed = _required_alternatives(holder, kind)
        return f"needs {' or '.join(needed)}" if needed else "matches none of the allowed forms"
    simple: dict[str, Callable[[Mapping[str, Any]], str]] = {
        "MinItems": lambda d: f"needs at least {d['limit']} item{'s' if d['limit'] != 1 else ''}",
        "MinProperties": lambda d: f"needs at least {d['limit']} entr{'ies' if d['limit'] != 1 else 'y'}",
        "MaxProperties": lambda d: f"has more than {d['limit']} entr{'ies' if d['limit'] != 1 else 'y'}",
        "MinLength": lambda d: "is empty" if d["limit"] == 1 else f"is shorter than {d['limit']} characters",
        "Minimum": lambda d: f"{_short(instance)} is below the minimum, {d['limit']}",
        "Maximum": lambda d: f"{_short(instance)} is above the maximum, {d['limit']}",
        "Pattern": lambda d: f"{_short(instance)} does not match {d['pattern']}",
        "Format": lambda d: f"{_short(instance)} is not a valid {d['format']}",
        "UniqueItems": lambda d: "lists an item twice",
    }
    if kind in simple:
        return simple[kind](details)
    text = str(error.message)
    return text if len(text) <= 200 else text[:197] + "..."


def _at(root: Any, path: Sequence[str | int]) -> Any:
    node = root
    for step in path:
        if isinstance(node, list) and isinstance(step, int):
            inside = step < len(node)
        else:
            inside = isinstance(node, Mapping) and step in node
        if not inside:
            return None
        node = node[step]
    return node


def _known_fields(holder: Any, root: Mapping[str, Any]) -> list[str]:
    """The fields an object schema declares, those of the schema it references included."""
    fields: list[str] = []
    while isinstance(holder, Mapping):
        fields += [name for name in holder.get("properties", {}) if name not in fields]
        reference = holder.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            break
        holder = _at(root, reference[2:].split("/"))
    return fields


def _required_alternatives(holder: Any, keyword: str) -> list[str]:
    """For anyOf/oneOf branches that only require a field each: those fields."""
    branches = holder.get("anyOf" if keyword == "AnyOf" else "oneOf") if isinstance(holder, Mapping) else None
    names = []
    for branch in branches or ():
        if not isinstance(branch, Mapping) or set(branch) != {"required"} or len(branch["required"]) != 1:
            return []
        names.append(str(branch["required"][0]))
    return names


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({_short(value)})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "null"


def _article(type_name: str) -> str:
    words = {"object": "a mapping", "array": "a list", "integer": "an integer", "null": "null"}
    return words.get(type_name, f"a {type_name}")
