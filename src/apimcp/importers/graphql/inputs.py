"""Field arguments to a tool's input schema (JSON Schema Draft 2020-12).

Input objects go to `$defs` and are referenced, so recursive inputs (a filter
with `and: [BookFilter!]`) stay finite. Nullable arguments and fields accept
null, which GraphQL distinguishes from leaving them out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLScalarType,
    is_required_argument,
    is_required_input_field,
    value_from_ast_untyped,
)
from graphql.utilities.get_default_value_ast import get_default_value_ast

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

_BUILT_IN: Mapping[str, Mapping[str, Any]] = {
    "Int": {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX},
    "Float": {"type": "number"},
    "Boolean": {"type": "boolean"},
    "String": {"type": "string"},
    "ID": {"type": ["string", "integer"]},  # GraphQL accepts an integer where an ID goes
}
_ANY_JSON_SCALAR = re.compile(r"json|object|any|map", re.IGNORECASE)
"""Custom scalars whose name says they hold any JSON value; every other custom scalar is taken as a string."""


class InputSchemas:
    """Builds input schemas of one schema's fields; input object definitions are made once and shared."""

    def __init__(self) -> None:
        self._definitions: dict[str, dict[str, Any]] = {}

    def for_arguments(self, arguments: Mapping[str, GraphQLArgument]) -> dict[str, Any]:
        """The tool's input schema: one property per argument, named as the argument."""
        properties = {name: self._value(arg.type, arg.description, arg) for name, arg in arguments.items()}
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        required = [name for name, arg in arguments.items() if is_required_argument(arg)]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        used = self._reachable(properties)
        if used:
            schema["$defs"] = {name: self._definitions[name] for name in sorted(used)}
        return schema

    def _value(
        self, type_: GraphQLInputType, description: str | None, holder: GraphQLArgument | GraphQLInputField | None
    ) -> dict[str, Any]:
        schema = self._type(type_)
        if holder is not None:
            default = get_default_value_ast(holder)
            if default is not None:
                schema["default"] = value_from_ast_untyped(default)
            if holder.deprecation_reason:
                schema["deprecated"] = True
        if description:
            schema["description"] = _join(description, schema.get("description"))
        return schema

    def _type(self, type_: GraphQLInputType) -> dict[str, Any]:
        if isinstance(type_, GraphQLNonNull):
            return self._non_null(type_.of_type)
        return nullable(self._non_null(type_))

    def _non_null(self, type_: GraphQLInputType) -> dict[str, Any]:
        if isinstance(type_, GraphQLList):
            return {"type": "array", "items": self._type(type_.of_type)}
        if isinstance(type_, GraphQLEnumType):
            return enum_schema(type_)
        if isinstance(type_, GraphQLScalarType):
            return scalar_schema(type_)
        if isinstance(type_, GraphQLInputObjectType):
            if type_.name not in self._definitions:
                self._definitions[type_.name] = {}  # placeholder first: the type may refer to itself
                self._definitions[type_.name] = self._input_object(type_)
            return {"$ref": f"#/$defs/{type_.name}"}
        raise TypeError(f"not an input type: {type_}")

    def _input_object(self, type_: GraphQLInputObjectType) -> dict[str, Any]:
        fields = type_.fields
        properties = {name: self._value(f.type, f.description, f) for name, f in fields.items()}
        schema: dict[str, Any] = {"type": "object"}
        if type_.description:
            schema["description"] = type_.description
        schema["properties"] = properties
        if getattr(type_, "is_one_of", False):
            # @oneOf: exactly one field, given a non-null value.
            for prop in properties.values():
                _drop_null(prop)
            schema["minProperties"] = schema["maxProperties"] = 1
        else:
            required = [name for name, f in fields.items() if is_required_input_field(f)]
            if required:
                schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def _reachable(self, schema: Any) -> set[str]:
        """Names of the input object definitions a schema refers to, directly or through other definitions."""
        found: set[str] = set()
        pending = [schema]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    name = ref.removeprefix("#/$defs/")
                    if name not in found:
                        found.add(name)
                        pending.append(self._definitions[name])
                pending.extend(node.values())
            elif isinstance(node, list):
                pending.extend(node)
        return found


def scalar_schema(type_: GraphQLScalarType) -> dict[str, Any]:
    built_in = _BUILT_IN.get(type_.name)
    if built_in is not None:
        return {key: list(value) if isinstance(value, list) else value for key, value in built_in.items()}
    schema: dict[str, Any] = {} if _ANY_JSON_SCALAR.search(type_.name) else {"type": "string"}
    schema["description"] = _join(f"A {type_.name}.", type_.description)
    return schema


def enum_schema(type_: GraphQLEnumType) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": list(type_.values)}
    described = [f"{name}: {value.description}" for name, value in type_.values.items() if value.description]
    text = _join(type_.description, "; ".join(described) if described else None)
    if text:
        schema["description"] = text
    return schema


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema`, also accepting null."""
    kind = schema.get("type")
    if kind is None:
        # A reference gets an alternative; a schema without a type constraint accepts null already.
        return {"anyOf": [schema, {"type": "null"}]} if "$ref" in schema else schema
    schema["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _drop_null(schema: dict[str, Any]) -> None:
    if isinstance(schema.get("type"), list) and "null" in schema["type"]:
        kinds = [kind for kind in schema["type"] if kind != "null"]
        schema["type"] = kinds[0] if len(kinds) == 1 else kinds
        if "enum" in schema:
            schema["enum"] = [value for value in schema["enum"] if value is not None]
    elif "anyOf" in schema:
        options = [option for option in schema.pop("anyOf") if option != {"type": "null"}]
        schema.update(options[0])


def _join(*parts: str | None) -> str:
    return " ".join(part.strip() for part in parts if part and part.strip())
