"""What a policy condition sees: five variables, each with the same keys on every call.

- `caller`: `authenticated` (bool), `principal`, `subject`, `issuer` (empty when unknown), `scopes` (a list),
  `client` (the client's address) and `revision` (the MCP revision the request speaks).
- `claims`: the access token's claims as verified (a JWT's, an introspection's answer; without a token, empty).
- `tool`: `name`, `title`, `service`, `kind` (rest, graphql, grpc, mcp or custom), `method` and `path` (REST),
  `operation` (`GET /books/{id}`, `mutation addBook`, `pkg.Books/Get`, `tool search`), `read_only`,
  `destructive`, `idempotent` (from its annotations), `tags` (a list) and `annotations` (as MCP lists them).
- `args`: the call's arguments, as sent.
- `now`: the time of the call (a CEL timestamp, UTC).

A tool's facts are fixed when the exposition is built; a caller's are read from the request.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from apimcp.catalog.model import GraphQLBinding, GrpcBinding, McpBinding, Operation, RestBinding
from apimcp.protocol.caller import Caller
from apimcp.protocol.models import Tool

Facts = dict[str, Any]


def tool_facts(tool: Tool, operation: Operation | None, service: str = "") -> Facts:
    """The `tool` variable for `tool` as served; `operation`: the service operation it calls (None for a
    scripted tool), whose binding says its kind, method and path."""
    annotations = tool.annotations
    binding = operation.binding if operation is not None else None
    method = path = ""
    kind = "custom"
    if isinstance(binding, RestBinding):
        kind, method, path = "rest", binding.method.upper(), binding.path
    elif isinstance(binding, GraphQLBinding):
        kind = "graphql"
    elif isinstance(binding, GrpcBinding):
        kind = "grpc"
    elif isinstance(binding, McpBinding):
        kind = "mcp"
    if operation is not None and operation.tool_name != tool.name:
        kind = "custom"  # a declarative tool: it calls an operation, but it is not that operation
    listed: dict[str, Any] = {}
    if annotations is not None:
        hints = {
            "readOnlyHint": annotations.read_only_hint,
            "destructiveHint": annotations.destructive_hint,
            "idempotentHint": annotations.idempotent_hint,
            "openWorldHint": annotations.open_world_hint,
        }
        listed = {key: value for key, value in hints.items() if value is not None}
    return {
        "name": tool.name,
        "title": tool.title or (annotations.title if annotations is not None else None) or "",
        "service": service,
        "kind": kind,
        "method": method,
        "path": path,
        "operation": operation.signature if operation is not None else "",
        "read_only": listed.get("readOnlyHint") is True,
        "destructive": listed.get("destructiveHint") is True,
        "idempotent": listed.get("idempotentHint") is True,
        "tags": list(operation.tags) if operation is not None else [],
        "annotations": listed,
    }


def caller_facts(caller: Caller | None, client: str | None, revision: str) -> Facts:
    """The `caller` variable for a request of `caller` (None: anonymous) from the address `client`."""
    if caller is None:
        return {
            "authenticated": False, "principal": "", "subject": "", "issuer": "", "scopes": [],
            "client": client or "", "revision": revision,
        }  # fmt: skip
    return {
        "authenticated": True,
        "principal": caller.principal,
        "subject": caller.subject or "",
        "issuer": caller.issuer or "",
        "scopes": sorted(caller.scopes),
        "client": client or "",
        "revision": revision,
    }


def claims_of(caller: Caller | None) -> Mapping[str, Any]:
    return caller.claims if caller is not None else {}


def now() -> datetime:
    return datetime.now(UTC)
