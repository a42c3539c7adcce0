"""How deeply a request nests objects and arrays, checked for the price of counting brackets.

Deep values break things far from where they enter: orjson refuses to encode
beyond 254 levels, recursive code hits Python's recursion limit. A body can
nest no deeper than it has `{` and `[` bytes, so counting them (a fast scan of
bytes already in memory, done by the endpoint) proves nearly every request
shallow enough; only a body with more brackets than the limit is walked, and
the walk stops at the first value that is too deep.
"""

from __future__ import annotations

from typing import Any

from apimcp.protocol.errors import INVALID_PARAMS, INVALID_REQUEST
from apimcp.protocol.jsonrpc import JsonObject, error_message, is_valid_id


def deeper_than(value: Any, limit: int) -> bool:
    """Whether objects and arrays nest more than `limit` levels in `value` (a scalar has depth 0)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        children = current.values() if isinstance(current, dict) else current
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def too_deep_error(payload: Any, limit: int) -> JsonObject | None:
    """The error for a parsed body nested deeper than `limit`, or None when it is not.

    A request's id is echoed; a problem inside `params` is -32602, anywhere else -32600.
    """
    if not deeper_than(payload, limit):
        return None
    if isinstance(payload, list):
        return error_message(None, INVALID_REQUEST, f"A message of the batch nests deeper than {limit} levels")
    raw_id = payload.get("id")
    request_id = raw_id if is_valid_id(raw_id) else None
    params = payload.get("params")
    if deeper_than(params, limit - 1):
        text = f"params nest objects and arrays deeper than {limit} levels, the most this endpoint reads"
        return error_message(request_id, INVALID_PARAMS, text, {"maxDepth": limit})
    text = f"The message nests objects and arrays deeper than {limit} levels, the most this endpoint reads"
    return error_message(request_id, INVALID_REQUEST, text, {"maxDepth": limit})
