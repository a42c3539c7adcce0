"""GraphQL schemas (SDL, introspection JSON, or a live endpoint) to catalog Services.

Every field of Query and Mutation becomes a tool whose arguments are the
field's arguments, always sent as variables of a document generated here, at
import time (see selection.py for what the document selects).
"""

from __future__ import annotations

from collections.abc import Mapping

from apimcp.catalog.model import ServerTemplate, Service
from apimcp.importers.errors import SpecError
from apimcp.importers.graphql.loading import introspect, looks_like_graphql, schema_from_bytes
from apimcp.importers.graphql.operations import OperationBuilder
from apimcp.importers.graphql.selection import DEFAULT_MAX_FIELDS
from apimcp.importers.openapi.loading import fetch
from apimcp.safety.fetch import Fetcher

__all__ = ["DEFAULT_DEPTH", "DEFAULT_MAX_FIELDS", "SpecError", "import_graphql", "looks_like_graphql"]

DEFAULT_DEPTH = 3
"""Levels of selection below each root field; GitHub's schema stays near 1 MB of documents at 3."""


def import_graphql(
    source: str,
    *,
    name: str,
    version: str,
    content: bytes | None = None,
    introspect: bool = False,
    headers: Mapping[str, str] | None = None,
    depth: int = DEFAULT_DEPTH,
    selections: Mapping[str, str] | None = None,
    tool_prefix: str = "",
    fetcher: Fetcher | None = None,
) -> Service:
    """Read a GraphQL schema into a Service named `name`, version `version`.

    `source` is a file path or http(s) URL of SDL or introspection JSON; with `content`, it only
    names the uploaded document. With `introspect`, `source` is a live endpoint, asked for its
    schema with `headers`, and it becomes the service's server. `selections` replaces generated
    selection sets, by tool name or root field name: `{"user": "{ id name }"}`. URLs are read (and endpoints
    introspected) by `fetcher` (default: public addresses only, default limits).
    """
    if not name or not name.strip():
        raise SpecError("a GraphQL schema does not name its service: a service name is required", source=source)
    if not version or not version.strip():
        raise SpecError("a GraphQL schema has no version: a service version is required", source=source)
    if depth < 1:
        raise SpecError(f"the selection depth must be at least 1, not {depth}", source=source)
    fetcher = fetcher or Fetcher()
    servers: tuple[ServerTemplate, ...] = ()
    if introspect:
        schema = _introspect(source, headers, fetcher)
        servers = (ServerTemplate(source),)
    else:
        schema = schema_from_bytes(content if content is not None else fetch(source, fetcher), source)
    try:
        builder = OperationBuilder(schema, source=source, depth=depth, selections=selections, tool_prefix=tool_prefix)
    except ValueError as exc:  # a tool prefix that makes no valid names
        raise SpecError(str(exc), source=source) from exc
    return Service(
        name=name.strip(),
        version=version.strip(),
        operations=tuple(builder.build()),
        description=schema.description,
        servers=servers,
        source=source,
        kind="graphql",
    )


_introspect = introspect  # the parameter of the same name hides the function inside import_graphql
