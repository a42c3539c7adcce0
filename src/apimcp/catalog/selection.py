"""Choosing which operations an exposition offers.

A pattern matches an operation by tool name, operationId, signature
(`METHOD /path`, `query field`, `mutation field`, `package.Service/Method`) or,
written `tag:NAME`, by tag. `*` and `?` are wildcards (`get_*`, `GET /pets/*`,
`tag:admin*`). An operation is offered when it matches an include pattern (or
there are none) and no exclude pattern.

With a tool prefix, a tool name matches as served and as the description gives it:
with `pets_`, both `delete_pet` and `pets_delete_pet` name the tool served as
`pets_delete_pet`. Users see the served name, the description's authors the other;
neither should have to know which one a selection is matched against. The
operations given here carry their served names (`served`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace

from apimcp.catalog.model import Operation
from apimcp.catalog.naming import fit


def served(operations: Sequence[Operation], prefix: str) -> list[Operation]:
    """`operations` with the tool names `prefix` gives them (the names clients see)."""
    if not prefix:
        return list(operations)
    return [replace(op, tool_name=fit(op.tool_name, prefix)) for op in operations]


def matches(operation: Operation, pattern: str, prefix: str = "") -> bool:
    """Whether `pattern` names `operation`, whose tool name is served with `prefix`."""
    if pattern.startswith("tag:"):
        wanted = pattern[4:]
        return any(fnmatch.fnmatchcase(tag, wanted) for tag in operation.tags)
    candidates = [operation.tool_name, _first_word_lowered(operation.signature)]
    if prefix and operation.tool_name.startswith(prefix):
        candidates.append(operation.tool_name.removeprefix(prefix))
    if operation.operation_id:
        candidates.append(operation.operation_id)
    pattern = _first_word_lowered(pattern)
    return any(fnmatch.fnmatchcase(candidate, pattern) for candidate in candidates)


def _first_word_lowered(text: str) -> str:
    """`GET /pets` and `get /pets`, `Query user` and `query user` are the same signature."""
    if " " not in text:
        return text
    head, _, rest = text.partition(" ")
    return f"{head.lower()} {rest}"


def select(
    operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str], prefix: str = ""
) -> list[Operation]:
    return [
        op
        for op in operations
        if (not include or any(matches(op, p, prefix) for p in include))
        and not any(matches(op, p, prefix) for p in exclude)
    ]


def served_selection(
    operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str], prefix: str = ""
) -> list[Operation]:
    """What a plan serves of a service's `operations`: named with its prefix (`served`), then selected."""
    return select(served(operations, prefix), include, exclude, prefix)


def nothing_selected(operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str]) -> str:
    """Why a selection offers no operation: the description has none, or the patterns left none."""
    if not operations:
        return "the description declares no operation, so there is nothing to expose"
    given = " and ".join(name for name, patterns in (("include", include), ("exclude", exclude)) if patterns)
    return f"{given or 'include/exclude'} leave{'s' if ' and ' not in given else ''} no operation to expose"


def unmatched(operations: Sequence[Operation], patterns: Sequence[str], prefix: str = "") -> list[str]:
    """Patterns that select nothing (most likely typos, worth an error)."""
    return [p for p in patterns if not any(matches(op, p, prefix) for op in operations)]
