"""Which importer reads a description: OpenAPI, GraphQL or protobuf.

Detection looks at the content only, cheapest and most certain test first;
anything unrecognised goes to the OpenAPI importer, whose errors explain what
an OpenAPI description needs.
"""

from __future__ import annotations

import re
from typing import Literal

from apimcp.importers.graphql import looks_like_graphql
from apimcp.importers.protobuf import looks_like_descriptor_set, looks_like_protobuf

DescriptionKind = Literal["openapi", "graphql", "grpc", "mcp"]
KINDS: tuple[DescriptionKind, ...] = ("openapi", "graphql", "grpc", "mcp")
"""`mcp` is never detected: an MCP server is imported from its URL when asked for by name."""

# A top-level `openapi:` / `swagger:` key (YAML) or `"openapi":` member (JSON) near the start.
_OPENAPI = re.compile(rb"""(^|[\s{,])["']?(openapi|swagger)["']?\s*:""", re.MULTILINE)


def detect_kind(content: bytes) -> DescriptionKind:
    head = content[:4096]
    if _OPENAPI.search(head):
        return "openapi"
    if looks_like_descriptor_set(content):
        return "grpc"
    # GraphQL before .proto text: SDL has `enum X {` lines too, but .proto has no `type X {` ones.
    if looks_like_graphql(content):
        return "graphql"
    if looks_like_protobuf(content):
        return "grpc"
    return "openapi"


def kind_of_url(url: str) -> DescriptionKind | None:
    """The kind a URL names by itself: grpc(s):// asks a gRPC server by reflection."""
    return "grpc" if re.match(r"^grpcs?://", url) else None
