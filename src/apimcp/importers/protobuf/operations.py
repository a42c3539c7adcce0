"""gRPC methods as catalog operations: one tool per method."""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor

from apimcp.catalog.model import GrpcBinding, Operation, ToolHints
from apimcp.catalog.naming import NameAllocator
from apimcp.importers.protobuf.descriptors import SourceIndex
from apimcp.importers.protobuf.schemas import SchemaBuilder

_LEVELS = descriptor_pb2.MethodOptions.IdempotencyLevel

SENDS_LIST = (
    "Client streaming: give the request messages as a list in `messages`; they are sent in order on one stream."
)
COLLECTS_STREAM = "Server streaming: the messages the server streams back are collected, in order, in `messages`."


def operations(service: ServiceDescriptor, index: SourceIndex, tool_prefix: str) -> tuple[Operation, ...]:
    names = NameAllocator(tool_prefix)
    return tuple(_operation(service, method, index, names) for method in service.methods)


def _operation(
    service: ServiceDescriptor, method: MethodDescriptor, index: SourceIndex, names: NameAllocator
) -> Operation:
    signature = f"{service.full_name}/{method.name}"
    options = method.GetOptions()
    level = options.idempotency_level
    hints = ToolHints(
        read_only=True if level == _LEVELS.NO_SIDE_EFFECTS else None,
        idempotent=True if level == _LEVELS.IDEMPOTENT else None,
    )
    notes = [index.comments.get(method.full_name, "")]
    if method.client_streaming:
        notes.append(
            SENDS_LIST.replace("Client streaming", "Bidirectional streaming") if method.server_streaming else SENDS_LIST
        )
    if method.server_streaming:
        notes.append(COLLECTS_STREAM)
    description = "\n\n".join(note for note in notes if note) or None
    return Operation(
        tool_name=names.allocate(method.name, signature),
        input_schema=_input_schema(method, index),
        output_schema=_output_schema(method, index),
        binding=GrpcBinding(
            service=service.full_name,
            method=method.name,
            input_type=method.input_type.full_name,
            output_type=method.output_type.full_name,
            client_streaming=method.client_streaming,
            server_streaming=method.server_streaming,
        ),
        description=description,
        hints=hints,
        operation_id=signature,
        tags=(service.full_name,),
        deprecated=options.deprecated,
    )


def _input_schema(method: MethodDescriptor, index: SourceIndex) -> dict[str, Any]:
    builder = SchemaBuilder(index)
    if not method.client_streaming:
        schema = builder.message(method.input_type)
        if schema.get("type") != "object":  # Timestamp, StringValue... as the whole request: no arguments fit
            schema = {"type": "object", "description": f"{method.input_type.full_name} cannot be given as arguments."}
        return builder.document(schema)
    return builder.document(_messages(builder, method.input_type, "The request messages, sent in order."))


def _output_schema(method: MethodDescriptor, index: SourceIndex) -> dict[str, Any] | None:
    builder = SchemaBuilder(index, output=True)
    if method.server_streaming:
        return builder.document(_messages(builder, method.output_type, "The messages the server sent, in order."))
    schema = builder.message(method.output_type)
    # Some well-known types print as strings or numbers; an output schema must describe an object.
    return builder.document(schema) if schema.get("type") == "object" else None


def _messages(builder: SchemaBuilder, message: Any, description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"messages": {"type": "array", "items": builder.reference(message), "description": description}},
        "required": ["messages"],
        "additionalProperties": False,
    }
