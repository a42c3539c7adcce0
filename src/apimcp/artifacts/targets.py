"""Which operation an artifact names: by tool name, operationId or signature, in that order.

reShapr's files name targets by operation name (`GET /v1/forecast`), which for REST is a signature,
while apimcp users think in tool names: all three are accepted. A signature's first word is read
without case (`get /pets/{id}`, `Query user`), as plan patterns read it (`catalog.selection`).
"""

from __future__ import annotations

from collections.abc import Sequence

from apimcp.catalog.model import Operation


def find_target(reference: str, operations: Sequence[Operation]) -> Operation | None:
    """The operation `reference` names, or None. A tool name wins over an operationId, which wins over a
    signature, so that a name never changes meaning when another operation is added."""
    for operation in operations:
        if operation.tool_name == reference:
            return operation
    for operation in operations:
        if operation.operation_id == reference:
            return operation
    wanted = signature_key(reference)
    if wanted is None:
        return None
    return next((op for op in operations if signature_key(op.signature) == wanted), None)


def signature_key(text: str) -> str | None:
    """A signature as compared: its first word without case (`GET /pets` → `get /pets`), None when empty."""
    head, space, rest = text.strip().partition(" ")
    if not space:
        return text.strip() or None  # a gRPC signature (package.Service/Method) has no space
    return f"{head.lower()} {rest.strip()}"
