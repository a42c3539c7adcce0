"""An operation as the MCP tool that serves it: what a gateway lists, and what reports on an exposition measure."""

from __future__ import annotations

from apimcp.catalog.model import Operation
from apimcp.protocol.models import Tool, ToolAnnotations


def tool_of(operation: Operation, *, output_schema: bool = True) -> Tool:
    hints = operation.hints
    return Tool(
        name=operation.tool_name,
        title=operation.title,
        description=operation.description,
        input_schema=operation.input_schema,
        output_schema=operation.output_schema if output_schema else None,
        annotations=ToolAnnotations(
            title=operation.title,
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=hints.open_world,
        ),
        meta={"io.apimcp/operation": {"signature": operation.signature, "operationId": operation.operation_id}},
    )
