"""Services as JSON: how the control plane stores compiled services and ships them to gateways.

The encoding is plain data (dicts, lists, strings) with a format version. Shared
schema objects are written once per place they appear; decoding gives an
equal Service, so a gateway never parses an API description.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import orjson

from apimcp.catalog.model import (
    Binding,
    BodyBinding,
    DescriptionWarning,
    GraphQLBinding,
    GrpcBinding,
    McpBinding,
    McpOfferings,
    Operation,
    ParameterBinding,
    RestBinding,
    ServerTemplate,
    ServerVariable,
    Service,
    ToolHints,
)

FORMAT = 1


class CodecError(ValueError):
    pass


def _servers(servers: tuple[ServerTemplate, ...]) -> list[dict[str, Any]]:
    return [
        {"url": s.url, "variables": {k: {"default": v.default, "enum": list(v.enum)} for k, v in s.variables.items()}}
        for s in servers
    ]


def _servers_back(raw: list[dict[str, Any]]) -> tuple[ServerTemplate, ...]:
    return tuple(
        ServerTemplate(
            url=s["url"],
            variables={k: ServerVariable(v["default"], tuple(v["enum"])) for k, v in s["variables"].items()},
        )
        for s in raw
    )


def _binding(b: Binding) -> dict[str, Any]:
    if isinstance(b, GraphQLBinding):
        return {
            "graphql": {
                "type": b.operation_type,
                "field": b.root_field,
                "document": b.document,
                "operation_name": b.operation_name,
                "variables": dict(b.variables),
            }
        }
    if isinstance(b, GrpcBinding):
        return {"grpc": [b.service, b.method, b.input_type, b.output_type, b.client_streaming, b.server_streaming]}
    if isinstance(b, McpBinding):
        return {"mcp": [b.name, b.digest]}
    body = b.body
    return {
        "rest": {
            "method": b.method,
            "path": b.path,
            "parameters": [
                [p.argument, p.name, p.location, p.style, p.explode, p.allow_reserved, p.content_type]
                for p in b.parameters
            ],
            "body": None
            if body is None
            else {
                "media_type": body.media_type,
                "kind": body.kind,
                "argument": body.argument,
                "fields": list(body.fields),
                "extra_fields": body.extra_fields,
                "binary_fields": sorted(body.binary_fields),
                "field_media_types": dict(body.field_media_types),
                "required": body.required,
            },
            "accept": list(b.accept),
            "servers": _servers(b.servers),
        }
    }


def _operation(op: Operation) -> dict[str, Any]:
    return {
        "tool": op.tool_name,
        "input": op.input_schema,
        "output": op.output_schema,
        "title": op.title,
        "description": op.description,
        "hints": [op.hints.read_only, op.hints.destructive, op.hints.idempotent, op.hints.open_world],
        "operation_id": op.operation_id,
        "tags": list(op.tags),
        "deprecated": op.deprecated,
        **_binding(op.binding),
    }


def _shared(schema: Any, pool: dict[bytes, Any]) -> Any:
    """The schema with each `$defs` entry replaced by an equal one already seen (decoding shares again
    what importing shared, so a thousand tools referring to `repository` hold one copy of it)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        return schema
    definitions = {}
    for name, definition in schema["$defs"].items():
        key = orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)
        definitions[name] = pool.setdefault(key, definition)
    return {**schema, "$defs": definitions}


def _binding_back(raw: Mapping[str, Any]) -> Binding:
    if "graphql" in raw:
        g = raw["graphql"]
        return GraphQLBinding(
            operation_type=g["type"],
            root_field=g["field"],
            document=g["document"],
            operation_name=g["operation_name"],
            variables=g["variables"],
        )
    if "grpc" in raw:
        service, method, input_type, output_type, client_streaming, server_streaming = raw["grpc"]
        return GrpcBinding(service, method, input_type, output_type, client_streaming, server_streaming)
    if "mcp" in raw:
        name, digest = raw["mcp"]
        return McpBinding(name, digest)
    rest = raw["rest"]
    body = rest["body"]
    return RestBinding(
        method=rest["method"],
        path=rest["path"],
        parameters=tuple(ParameterBinding(*p) for p in rest["parameters"]),
        body=None
        if body is None
        else BodyBinding(
            media_type=body["media_type"],
            kind=body["kind"],
            argument=body["argument"],
            fields=tuple(body["fields"]),
            extra_fields=body["extra_fields"],
            binary_fields=frozenset(body["binary_fields"]),
            field_media_types=body["field_media_types"],
            required=body["required"],
        ),
        accept=tuple(rest["accept"]),
        servers=_servers_back(rest["servers"]),
    )


def _operation_back(raw: Mapping[str, Any], pool: dict[bytes, Any]) -> Operation:
    read_only, destructive, idempotent, open_world = raw["hints"]
    return Operation(
        tool_name=raw["tool"],
        input_schema=_shared(raw["input"], pool),
        output_schema=_shared(raw["output"], pool),
        title=raw["title"],
        description=raw["description"],
        hints=ToolHints(read_only, destructive, idempotent, open_world),
        operation_id=raw["operation_id"],
        tags=tuple(raw["tags"]),
        deprecated=raw["deprecated"],
        binding=_binding_back(raw),
    )


def _offerings(offerings: McpOfferings) -> dict[str, Any]:
    return {
        "prompts": list(offerings.prompts),
        "resources": list(offerings.resources),
        "templates": list(offerings.templates),
    }


def _offerings_back(raw: Mapping[str, Any] | None) -> McpOfferings:
    if not raw:
        return McpOfferings()
    return McpOfferings(tuple(raw["prompts"]), tuple(raw["resources"]), tuple(raw["templates"]))


def encode_service(service: Service) -> bytes:
    return orjson.dumps(
        {
            "format": FORMAT,
            "name": service.name,
            "version": service.version,
            "description": service.description,
            "servers": _servers(service.servers),
            "source": service.source,
            "kind": service.kind,
            "descriptors": None if service.descriptors is None else base64.b64encode(service.descriptors).decode(),
            "operations": [_operation(op) for op in service.operations],
            # only when there are some, so that services without warnings encode as they always did
            **(
                {"warnings": [[w.location, w.problem, w.operation] for w in service.warnings]}
                if service.warnings
                else {}
            ),
            **({"offerings": _offerings(service.offerings)} if service.offerings else {}),
        }
    )


def decode_service(data: bytes | Mapping[str, Any]) -> Service:
    if isinstance(data, bytes):
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CodecError(f"a compiled service is not valid JSON: {exc}") from exc
    else:
        raw = data
    if not isinstance(raw, Mapping):
        raise CodecError(f"a compiled service must be a JSON object, not {type(raw).__name__}")
    found = raw.get("format")
    if type(found) is not int or found != FORMAT:
        raise CodecError(f"a compiled service must have format {FORMAT}, not {found!r}")
    pool: dict[bytes, Any] = {}
    try:
        descriptors = raw.get("descriptors")
        return Service(
            name=raw["name"],
            version=raw["version"],
            description=raw["description"],
            servers=_servers_back(raw["servers"]),
            source=raw["source"],
            operations=tuple(_operation_back(op, pool) for op in raw["operations"]),
            kind=raw.get("kind", "rest"),  # encodings written before GraphQL and gRPC were all REST
            descriptors=None if descriptors is None else base64.b64decode(descriptors, validate=True),
            warnings=tuple(DescriptionWarning(*w) for w in raw.get("warnings", ())),
            offerings=_offerings_back(raw.get("offerings")),
        )
    except KeyError as exc:
        raise CodecError(f"a compiled service is malformed: {exc.args[0]!r} is missing") from exc
    except (AttributeError, TypeError, ValueError) as exc:
        raise CodecError(f"a compiled service is malformed: {exc}") from exc
