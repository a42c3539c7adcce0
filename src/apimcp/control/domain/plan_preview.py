"""What a plan would serve before it is saved: every operation of its service with the tool name the prefix gives
it, whether the include and exclude patterns select it and, when not, why; and the patterns that select nothing
(which saving would refuse). The same selection as the gateway's (`catalog.selection`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.orm import Session

from apimcp.catalog.codec import decode_service
from apimcp.catalog.selection import matches, served, unmatched
from apimcp.control.domain.common import get_owned
from apimcp.control.domain.plans import checked_prefix
from apimcp.control.errors import Invalid
from apimcp.control.models import Service

MAX_PATTERNS = 1000
MAX_PATTERN_CHARS = 500


def _checked(field: str, patterns: Sequence[Any]) -> list[str]:
    if len(patterns) > MAX_PATTERNS:
        raise Invalid(f"at most {MAX_PATTERNS} patterns", field=field)
    for pattern in patterns:
        if not isinstance(pattern, str) or not 0 < len(pattern) <= MAX_PATTERN_CHARS:
            raise Invalid(f"operation patterns are non-empty strings of at most {MAX_PATTERN_CHARS} characters",
                          field=field)  # fmt: skip
    return list(patterns)


def preview(
    session: Session, organization_id: str, service_id: str, include: Sequence[Any], exclude: Sequence[Any], prefix: Any
) -> dict[str, Any]:
    service = get_owned(session, Service, organization_id, service_id, "service")
    prefix = checked_prefix(prefix)
    include, exclude = _checked("include", include), _checked("exclude", exclude)
    operations = served(decode_service(service.compiled).operations, prefix)
    tools = []
    for operation in operations:
        included = not include or any(matches(operation, p, prefix) for p in include)
        excluded_by = next((p for p in exclude if matches(operation, p, prefix)), None)
        tools.append({
            "name": operation.tool_name,
            "operation": operation.operation_id,
            "signature": operation.signature,
            "summary": operation.title or (operation.description or "").split("\n", 1)[0][:200] or None,
            "tags": list(operation.tags),
            "read_only": operation.hints.read_only,
            "served": included and excluded_by is None,
            "why_not": None if included and excluded_by is None
            else f"excluded by {excluded_by}" if excluded_by is not None else "not included",
        })  # fmt: skip
    return {
        "service_id": service.id,
        "total": len(tools),
        "served": sum(1 for tool in tools if tool["served"]),
        "unmatched": {
            "include": unmatched(operations, include, prefix),
            "exclude": unmatched(operations, exclude, prefix),
        },
        "tools": tools,
    }
