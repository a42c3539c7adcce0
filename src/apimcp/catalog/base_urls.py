"""Where a description says an operation is called, for a plan that gives no backend URL.

A plan's backend URL, when it has one, replaces the description's servers (a server that is a path, `/v1`,
then means nothing). Without one, an operation is called at its own first server (path or operation level; a
path there is joined to the description's first server), else at the description's first server. When that
is missing, or is still only a path (what a Swagger 2.0 description without `host` gives), no call can be
made: plans are refused where they are made (`backend_needed`), so that no call fails later with "The
backend URL is not valid: /v1/items".
"""

from __future__ import annotations

from collections.abc import Iterable

from apimcp.catalog.model import Operation, RestBinding, Service


def described_base_url(service: Service, operation: Operation) -> str | None:
    """The URL `operation`'s calls are made under when no backend URL is given (None: the description gives
    none); perhaps only a path."""
    own = operation.binding.servers if isinstance(operation.binding, RestBinding) else ()
    servers = own or service.servers
    if not servers:
        return None
    url = servers[0].resolve()
    if url.startswith("/") and servers is own and service.servers:
        return service.servers[0].resolve().rstrip("/") + url
    return url


def backend_needed(service: Service, operations: Iterable[Operation]) -> str | None:
    """Why calling `operations` of `service` needs a backend URL, as what the description does ("declares no
    servers"), or None when the description says where each of them is."""
    for operation in operations:
        url = described_base_url(service, operation)
        if url is None:
            return "declares no servers"
        if url.startswith("/"):
            return (f"gives only a path as its server URL ({url!r}), with no host to call (as a Swagger 2.0 "
                    "description without host does)")  # fmt: skip
    return None
