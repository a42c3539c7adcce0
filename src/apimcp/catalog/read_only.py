"""Which tools are read-only when a plan says so itself (`read_only_tools`), rather than the description.

A tool's `readOnlyHint` comes from what it calls (a REST GET, a GraphQL query, a gRPC method declared without side
effects) or, for a tool of an MCP server, from the server's own claim. Read-only code mode, policies' `tool.read_only`,
approvals of tools that are not read-only and the answer cache all trust it, so an operator who does not trust a
server's claims, or knows better than a description, names the read-only tools: those the patterns select (as
`include` does) are read-only, and every other tool of the plan is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from apimcp.catalog.model import Operation
from apimcp.catalog.selection import matches

MAX_PATTERNS = 200


def decided(operations: Sequence[Operation], patterns: Sequence[str] | None, prefix: str = "") -> list[Operation]:
    """`operations` as the plan holds them: unchanged without patterns (None), else read-only exactly when a pattern
    selects them (a read-only tool claims nothing destructive)."""
    if patterns is None:
        return list(operations)
    return [_held(op, any(matches(op, pattern, prefix) for pattern in patterns)) for op in operations]


def _held(operation: Operation, read_only: bool) -> Operation:
    hints = operation.hints
    destructive = None if read_only else hints.destructive
    if hints.read_only is read_only and hints.destructive is destructive:
        return operation
    return replace(operation, hints=replace(hints, read_only=read_only, destructive=destructive))
