"""The tools of a selection of operations, prepared once and shared by the expositions that select them.

Tools and validators depend only on the operations, not on the backend, so expositions of the same
selection share one `ToolSet` (with the encoded tools/list page the engine caches for it).
"""

from __future__ import annotations

from collections.abc import Sequence

from apimcp.catalog.model import Operation
from apimcp.catalog.tools import tool_of
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import Page


class _Prepared:
    __slots__ = ("input", "operation", "output", "tool")

    def __init__(self, operation: Operation, output_schemas: bool) -> None:
        self.operation = operation
        self.tool = tool_of(operation, output_schema=output_schemas)
        self.input = ArgumentValidator(operation.input_schema)
        schema = operation.output_schema
        self.output = ArgumentValidator(schema) if schema is not None and output_schemas else None


class ToolSet:
    """The tools of some operations, with their validators and their one-page listing; immutable."""

    def __init__(self, operations: Sequence[Operation], output_schemas: bool = True) -> None:
        self.prepared = tuple(_Prepared(operation, output_schemas) for operation in operations)
        self.page = Page(items=tuple(p.tool for p in self.prepared))
