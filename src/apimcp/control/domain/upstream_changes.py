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
from collections.abc import Callable, Mapping
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
Kind = Literal["tool", "prompt", "resource", "template"]


@dataclass(frozen=True, slots=True)
class DefinitionChange:
    kind: Kind
    name: str
    """Its name upstream (a resource's URI, a template's URI template)."""
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
    return {op.binding.name: op for op in service.operations if isinstance(op.binding, McpBinding)}


def _text(definition: Mapping[str, Any] | None) -> list[str]:
    if definition is None:
        return []
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _diff(name: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    lines = list(
        difflib.unified_diff(_text(before), _text(after), f"{name} (served)", f"{name} (upstream now)", lineterm="")
    )
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"... {len(lines) - MAX_DIFF_LINES} more lines"]
    return "\n".join(lines)


def compare(served: CatalogService, fresh: CatalogService) -> list[DefinitionChange]:
    """What differs between what is served and what the upstream lists now: tools (by digest), then prompts,
    resources and templates, each in the upstream's order, then the removed ones."""
    tools_before, tools_after = _by_upstream_name(served), _by_upstream_name(fresh)
    found = _changes(
        "tool",
        {name: definition_of(op) for name, op in tools_before.items()},
        {name: definition_of(op) for name, op in tools_after.items()},
        same=lambda name: _digest(tools_before[name]) == _digest(tools_after[name]),
    )
    offered: tuple[tuple[Kind, str, tuple[Mapping[str, Any], ...], tuple[Mapping[str, Any], ...]], ...] = (
        ("prompt", "name", served.offerings.prompts, fresh.offerings.prompts),
        ("resource", "uri", served.offerings.resources, fresh.offerings.resources),
        ("template", "uriTemplate", served.offerings.templates, fresh.offerings.templates),
    )
    for kind, key, before, after in offered:
        old = {item[key]: item for item in before}
        new = {item[key]: item for item in after}
        found += _changes(kind, old, new, same=_equal_in(old, new))
    return found


def _equal_in(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> Callable[[str], bool]:
    return lambda name: old[name] == new[name]


def _changes(
    kind: Kind,
    before: Mapping[str, Mapping[str, Any]],
    after: Mapping[str, Mapping[str, Any]],
    same: Callable[[str], bool],
) -> list[DefinitionChange]:
    found: list[DefinitionChange] = []
    for name, definition in after.items():
        if name in before and same(name):
            continue
        flags = tuple(markers(json.dumps(definition, ensure_ascii=False)))
        change: Change = "added" if name not in before else "changed"
        found.append(DefinitionChange(kind, name, change, _diff(name, before.get(name), definition), flags))
    found += [
        DefinitionChange(kind, name, "removed", _diff(name, definition, None))
        for name, definition in before.items()
        if name not in after
    ]
    return found


def _digest(operation: Operation) -> str:
    binding = operation.binding
    return binding.digest if isinstance(binding, McpBinding) else ""


def hold(service: Service, compiled: bytes, found: list[DefinitionChange]) -> None:
    """Keep `compiled` (the upstream's catalog now) beside what is served, with what changed."""
    service.pending_compiled = compiled
    service.pending_hash = hashlib.sha256(compiled).hexdigest()
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
    service.pending_hash = None
    service.pending_changes = None


def served_to(plan_trusts: bool, service: Service) -> tuple[str, bytes]:
    """The catalog (its hash and encoding) a plan serves: what its MCP server lists now, held or not, when the plan
    trusts it; else what an admin accepted."""
    if plan_trusts and service.pending_compiled is not None and service.pending_hash is not None:
        return service.pending_hash, service.pending_compiled
    return service.compiled_hash, service.compiled


def serve(service: Service, compiled: bytes, catalog: CatalogService) -> None:
    """Make `compiled` (the encoding of `catalog`) what the service serves."""
    service.description = catalog.description
    service.compiled = compiled
    service.compiled_hash = hashlib.sha256(compiled).hexdigest()
    service.operation_count = len(catalog.operations)
