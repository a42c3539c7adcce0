"""Choosing which operations an exposition offers.

A pattern matches an operation by tool name, operationId, signature
(`METHOD /path`, `query field`, `mutation field`, `package.Service/Method`) or,
written `tag:NAME`, by tag. `*` and `?` are wildcards (`get_*`, `GET /pets/*`,
`tag:admin*`). An operation is offered when it matches an include pattern (or
there are none) and no exclude pattern.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from apimcp.catalog.model import Operation


def matches(operation: Operation, pattern: str) -> bool:
    if pattern.startswith("tag:"):
        wanted = pattern[4:]
        return any(fnmatch.fnmatchcase(tag, wanted) for tag in operation.tags)
    candidates = [operation.tool_name, _first_word_lowered(operation.signature)]
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


def select(operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str]) -> list[Operation]:
    return [
        op
        for op in operations
        if (not include or any(matches(op, p) for p in include)) and not any(matches(op, p) for p in exclude)
    ]


def nothing_selected(operations: Sequence[Operation], include: Sequence[str], exclude: Sequence[str]) -> str:
    """Why a selection offers no operation: the description has none, or the patterns left none."""
    if not operations:
        return "the description declares no operation, so there is nothing to expose"
    given = " and ".join(name for name, patterns in (("include", include), ("exclude", exclude)) if patterns)
    return f"{given or 'include/exclude'} leave{'s' if ' and ' not in given else ''} no operation to expose"


def unmatched(operations: Sequence[Operation], patterns: Sequence[str]) -> list[str]:
    """Patterns that select nothing (most likely typos, worth an error)."""
    return [p for p in patterns if not any(matches(op, p) for op in operations)]
