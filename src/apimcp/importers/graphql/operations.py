"""Root fields of Query and Mutation to Operations: tool, document, input and output schemas."""

from __future__ import annotations

from collections.abc import Mapping

from graphql import (
    DocumentNode,
    GraphQLArgument,
    GraphQLError,
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSyntaxError,
    OperationDefinitionNode,
    get_named_type,
    is_required_argument,
    parse,
    validate,
)

from apimcp.catalog.model import GraphQLBinding, GraphQLOperationType, Operation, ToolHints
from apimcp.catalog.naming import NameAllocator, snake_case
from apimcp.importers.cpu_budget import DEFAULT_MAX_CPU_SECONDS, CpuBudget
from apimcp.importers.errors import SpecError
from apimcp.importers.graphql.inputs import InputSchemas
from apimcp.importers.graphql.output import output_schema
from apimcp.importers.graphql.selection import DEFAULT_MAX_FIELDS, generate_selection

_HINTS: Mapping[GraphQLOperationType, ToolHints] = {
    "query": ToolHints(read_only=True, destructive=False, idempotent=True),
    "mutation": ToolHints(read_only=False, destructive=True, idempotent=False),
}


class OperationBuilder:
    def __init__(
        self,
        schema: GraphQLSchema,
        *,
        source: str,
        depth: int,
        selections: Mapping[str, str] | None = None,
        tool_prefix: str = "",
        max_fields: int = DEFAULT_MAX_FIELDS,
    ) -> None:
        self._schema = schema
        self._source = source
        self._depth = depth
        self._selections = dict(selections or {})
        self._max_fields = max_fields
        self._names = NameAllocator(tool_prefix)
        self._inputs = InputSchemas()
        self._budget = CpuBudget(DEFAULT_MAX_CPU_SECONDS, source, setting=None)

    def build(self) -> list[Operation]:
        roots: list[tuple[GraphQLOperationType, GraphQLObjectType | None]] = [
            ("query", self._schema.query_type),
            ("mutation", self._schema.mutation_type),
        ]
        operations: list[Operation] = []
        used: set[str] = set()
        for operation_type, root in roots:
            for field_name, field in (root.fields if root else {}).items():
                self._budget.check()
                operation, override_key = self._operation(operation_type, field_name, field)
                operations.append(operation)
                if override_key is not None:
                    used.add(override_key)
        unknown = sorted(set(self._selections) - used)
        if unknown:
            raise SpecError(
                f"selection overrides name no tool or root field: {', '.join(unknown)}", source=self._source
            )
        return operations

    def _operation(
        self, operation_type: GraphQLOperationType, field_name: str, field: GraphQLField
    ) -> tuple[Operation, str | None]:
        tool_name = self._names.allocate(field_name, f"{operation_type} {field_name}")
        override_key = next((key for key in (tool_name, field_name) if key in self._selections), None)
        variables = {name: variable_type(arg) for name, arg in field.args.items()}
        operation_name = field_name[0].upper() + field_name[1:]
        if override_key is not None:
            selection: str | None = self._selections[override_key]
        else:
            selection = generate_selection(self._schema, get_named_type(field.type), self._depth, self._max_fields)
        text = render_document(operation_type, operation_name, field_name, variables, selection)
        document = self._parse(text, tool_name, checked=override_key is not None)
        description = field.description.strip() if field.description else None
        if field.deprecation_reason:
            description = ((description + "\n\n") if description else "") + f"Deprecated: {field.deprecation_reason}"
        operation = Operation(
            tool_name=tool_name,
            input_schema=self._inputs.for_arguments(field.args),
            binding=GraphQLBinding(
                operation_type=operation_type,
                root_field=field_name,
                document=text,
                operation_name=operation_name,
                variables=variables,
            ),
            title=snake_case(field_name).replace("_", " ").capitalize() or None,
            description=description,
            output_schema=output_schema(self._schema, document),
            hints=_HINTS[operation_type],
            operation_id=field_name,
            tags=(operation_type,),
            deprecated=field.deprecation_reason is not None,
        )
        return operation, override_key

    def _parse(self, text: str, tool_name: str, *, checked: bool) -> DocumentNode:
        """The parsed document; one with a user's selection is also validated against the schema."""
        try:
            document = parse(text, no_location=not checked)
        except GraphQLSyntaxError as exc:
            raise SpecError(f"the selection override for tool {tool_name!r} is not valid: {exc.message}",
                            source=self._source) from exc  # fmt: skip
        if checked:
            errors: list[GraphQLError] = []
            if len(document.definitions) != 1 or not isinstance(document.definitions[0], OperationDefinitionNode):
                errors.append(GraphQLError("an override must be one selection set, such as '{ id name }'"))
            errors = errors or validate(self._schema, document)
            if errors:
                detail = "; ".join(error.message for error in errors[:5])
                raise SpecError(f"the selection override for tool {tool_name!r} is not valid: {detail}",
                                source=self._source)  # fmt: skip
        return document


def variable_type(argument: GraphQLArgument) -> str:
    """The variable's declared type: the argument's own, except that a non-null argument with a default
    takes a nullable variable, so that leaving it out lets the default apply."""
    type_ = argument.type
    if isinstance(type_, GraphQLNonNull) and not is_required_argument(argument):
        return str(type_.of_type)
    return str(type_)


def render_document(
    operation_type: GraphQLOperationType,
    operation_name: str,
    field_name: str,
    variables: Mapping[str, str],
    selection: str | None,
) -> str:
    """`query Name($a: T!) { field(a: $a) { ... } }`: every argument is a variable, never a literal."""
    declared = f"({', '.join(f'${name}: {type_}' for name, type_ in variables.items())})" if variables else ""
    passed = f"({', '.join(f'{name}: ${name}' for name in variables)})" if variables else ""
    tail = f" {selection}" if selection else ""
    return f"{operation_type} {operation_name}{declared} {{ {field_name}{passed}{tail} }}"
