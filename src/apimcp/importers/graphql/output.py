"""The output schema of a tool: the shape of the `data` object its document asks for.

Walks the operation's selection set against the schema, merging fields by
response key as GraphQL execution does (inline fragments and named fragments
apply to the concrete types they name). An interface or union becomes an
`anyOf` of its concrete types' shapes; types with the same shape share one
branch, told apart by `__typename` when it is selected. Custom scalars carry
no type constraint: their serialisation is the server's choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    is_abstract_type,
)

_BUILT_IN: Mapping[str, str] = {
    "Int": "integer",
    "Float": "number",
    "Boolean": "boolean",
    "String": "string",
    "ID": "string",
}


def output_schema(schema: GraphQLSchema, document: DocumentNode) -> dict[str, Any]:
    """The schema of `data` for the (single) operation of `document`."""
    operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
    root = schema.get_root_type(operation.operation)
    if root is None:
        raise ValueError(f"the schema has no {operation.operation.value} type")
    return _Walker(schema, fragments).object(root, [operation.selection_set])


class _Walker:
    def __init__(self, schema: GraphQLSchema, fragments: Mapping[str, FragmentDefinitionNode]) -> None:
        self._schema = schema
        self._fragments = fragments

    def value(self, type_: GraphQLOutputType, selections: list[SelectionSetNode]) -> dict[str, Any]:
        if isinstance(type_, GraphQLNonNull):
            return self._non_null(type_.of_type, selections)
        return _nullable(self._non_null(type_, selections))

    def _non_null(self, type_: GraphQLOutputType, selections: list[SelectionSetNode]) -> dict[str, Any]:
        if isinstance(type_, GraphQLList):
            return {"type": "array", "items": self.value(type_.of_type, selections)}
        if isinstance(type_, GraphQLEnumType):
            return {"type": "string", "enum": list(type_.values)}
        if isinstance(type_, GraphQLScalarType):
            kind = _BUILT_IN.get(type_.name)
            if kind is not None:
                return {"type": kind}
            return {"description": type_.description} if type_.description else {}
        if isinstance(type_, GraphQLObjectType):
            return self.object(type_, selections)
        if is_abstract_type(type_):
            return self._abstract(self._schema.get_possible_types(type_), selections)
        raise TypeError(f"not an output type: {type_}")

    def object(self, type_: GraphQLObjectType, selections: list[SelectionSetNode]) -> dict[str, Any]:
        fields: dict[str, tuple[list[FieldNode], bool]] = {}
        for selection_set in selections:
            self._collect(type_, selection_set, False, fields, set())
        properties: dict[str, Any] = {}
        required: list[str] = []
        for key, (nodes, conditional) in fields.items():
            name = nodes[0].name.value
            if name == "__typename":
                properties[key] = {"type": "string", "const": type_.name}
            else:
                inner = [node.selection_set for node in nodes if node.selection_set is not None]
                properties[key] = self.value(type_.fields[name].type, inner)
            if not conditional:
                required.append(key)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def _abstract(self, types: list[GraphQLObjectType], selections: list[SelectionSetNode]) -> dict[str, Any]:
        """One branch per distinct shape; `__typename` (when selected) lists the types of each branch."""
        groups: dict[bytes, tuple[dict[str, Any], list[str], str | None]] = {}
        for concrete in types:
            branch = self.object(concrete, selections)
            typename_key = next((k for k, v in branch["properties"].items() if v.get("const") == concrete.name), None)
            if typename_key is not None:
                branch["properties"][typename_key] = {"type": "string"}
            signature = orjson.dumps(branch, option=orjson.OPT_SORT_KEYS)
            groups.setdefault(signature, (branch, [], typename_key))[1].append(concrete.name)
        branches = []
        for branch, names, typename_key in groups.values():
            if typename_key is not None:
                names_schema = {"const": names[0]} if len(names) == 1 else {"enum": names}
                branch["properties"][typename_key] = {"type": "string", **names_schema}
            branches.append(branch)
        if not branches:
            return {"type": "object"}
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    def _collect(
        self,
        type_: GraphQLObjectType,
        selection_set: SelectionSetNode,
        conditional: bool,
        fields: dict[str, tuple[list[FieldNode], bool]],
        spread: set[str],
    ) -> None:
        """Fields by response key, as execution collects them for an object of `type_`."""
        for selection in selection_set.selections:
            maybe = conditional or bool(selection.directives)  # @skip / @include may leave it out
            if isinstance(selection, FieldNode):
                key = selection.alias.value if selection.alias else selection.name.value
                nodes, was_conditional = fields.get(key, ([], True))
                nodes.append(selection)
                fields[key] = (nodes, was_conditional and maybe)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition.name.value if selection.type_condition else None
                if self._applies(type_, condition):
                    self._collect(type_, selection.selection_set, maybe, fields, spread)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self._fragments.get(name)
                if fragment is None or name in spread:
                    continue
                if self._applies(type_, fragment.type_condition.name.value):
                    self._collect(type_, fragment.selection_set, maybe, fields, spread | {name})

    def _applies(self, type_: GraphQLObjectType, condition: str | None) -> bool:
        if condition is None or condition == type_.name:
            return True
        named = self._schema.get_type(condition)
        return named is not None and is_abstract_type(named) and self._schema.is_sub_type(named, type_)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    if "anyOf" in schema:
        schema["anyOf"].append({"type": "null"})
    return schema
