"""Pinned definitions of MCP servers' tools: what an upstream changed is held until an admin accepts it.

A service imported from an MCP server is served with the definitions it had when it was imported, each
pinned by its digest (`federation.definitions`). Importing it again (`apimcp import URL --mcp`, or `apimcp
service refresh`) compares what the upstream lists now with what is served: when a tool was added, changed
or removed, the new catalog is held beside the served one, with what changed (a diff of each definition, and
the markers of text aimed at the model it now holds) until an admin accepts it (then it is served) or
rejects it. A silent change of a tool's description ("rug pull") is thus never served unseen.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sqlalchemy.orm import Session

from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import McpBinding, Operation
from apimcp.catalog.model import Service as CatalogService
from apimcp.control import changes
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Conflict
from apimcp.control.models import Service
from apimcp.safety.model_instructions import markers

MAX_DIFF_LINES = 400
"""Per tool: a larger diff is cut, saying how many lines were left out."""

Change = Literal["added", "changed", "removed"]


@dataclass(frozen=True, slots=True)
class DefinitionChange:
    tool: str
    """The tool's name upstream."""
    change: Change
    diff: str
    """A unified diff of the definition as the model reads it (title, description, schemas, annotations)."""
    flags: tuple[str, ...] = ()
    """What the new definition holds that is aimed at the model."""


def definition_of(operation: Operation) -> dict[str, Any]:
    """What a model reads of a tool, for comparing two versions of it."""
    hints = operation.hints
    return {
        "title": operation.title,
        "description": operation.description,
        "inputSchema": operation.input_schema,
        "outputSchema": operation.output_schema,
        "annotations": {
            "readOnlyHint": hints.read_only,
            "destructiveHint": hints.destructive,
            "idempotentHint": hints.idempotent,
            "openWorldHint": hints.open_world,
        },
    }


def _by_upstream_name(service: CatalogService) -> dict[str, Operation]:
    return {op.binding.tool: op for op in service.operations if isinstance(op.binding, McpBinding)}


def _text(operation: Operation | None) -> list[str]:
    if operation is None:
        return []
    return json.dumps(definition_of(operation), indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _diff(tool: str, before: Operation | None, after: Operation | None) -> str:
    lines = list(difflib.unified_diff(_text(before), _text(after), f"{tool} (served)", f"{tool} (upstream now)",
                                      lineterm=""))  # fmt: skip
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... {len(lines) - MAX_DIFF_LINES} more lines"]
    return "\n".join(lines)


def compare(served: CatalogService, fresh: CatalogService) -> list[DefinitionChange]:
    """What differs between the tools served and those the upstream lists now, in the upstream's order (then
    the removed ones)."""
    before, after = _by_upstream_name(served), _by_upstream_name(fresh)
    found: list[DefinitionChange] = []
    for tool, operation in after.items():
        old = before.get(tool)
        if old is not None and _digest(old) == _digest(operation):
            continue
        flags = tuple(markers(json.dumps(definition_of(operation), ensure_ascii=False)))
        found.append(DefinitionChange(tool, "added" if old is None else "changed", _diff(tool, old, operation), flags))
    found += [
        DefinitionChange(tool, "removed", _diff(tool, op, None)) for tool, op in before.items() if tool not in after
    ]
    return found


def _digest(operation: Operation) -> str:
    binding = operation.binding
    return binding.digest if isinstance(binding, McpBinding) else ""


def hold(service: Service, compiled: bytes, found: list[DefinitionChange]) -> None:
    """Keep `compiled` (the upstream's catalog now) beside what is served, with what changed."""
    service.pending_compiled = compiled
    service.pending_changes = [asdict(change) for change in found]


def held(session: Session, organization_id: str, service_id: str) -> tuple[Service, list[Mapping[str, Any]]]:
    """A service and the changes of its upstream held for review (none: nothing is held)."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    return service, list(service.pending_changes or [])


def accept(session: Session, organization_id: str, service_id: str) -> Service:
    """Serve what the upstream lists now: the held catalog replaces the served one (gateways resync)."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    if service.pending_compiled is None:
        raise Conflict(f"{service.name} {service.version} has no held changes to accept")
    serve(service, service.pending_compiled, decode_service(service.pending_compiled))
    reject_held(service)
    changes.record(session, organization_id, "service", service.id)
    return service


def reject(session: Session, organization_id: str, service_id: str) -> Service:
    """Keep serving what is served: the held catalog is dropped (importing again holds it again)."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    if service.pending_compiled is None:
        raise Conflict(f"{service.name} {service.version} has no held changes to reject")
    reject_held(service)
    return service


def reject_held(service: Service) -> None:
    service.pending_compiled = None
    service.pending_changes = None


def serve(service: Service, compiled: bytes, catalog: CatalogService) -> None:
    """Make `compiled` (the encoding of `catalog`) what the service serves."""
    service.description = catalog.description
    service.compiled = compiled
    service.compiled_hash = hashlib.sha256(compiled).hexdigest()
    service.operation_count = len(catalog.operations)
