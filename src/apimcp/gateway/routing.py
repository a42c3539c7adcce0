"""The routing table: which exposition each MCP path names now, and which paths name each exposition.

An exposition may answer at `/mcp/{organization}/{name}` (canonical when it has a name), `/mcp/{id}`,
`/mcp/{organization}/{service}/{version}` and, in the default organization, `/mcp/{name}`. Some of these are
shared: the version URL names the most recent exposition of that service, and `/mcp/{x}` an id before a name.
So what an exposition answers at depends on the others, and is decided once per table: `served` holds, for
each exposition, the paths that lead to it now. They are what its access tokens may be issued for (a token
for the version URL opens the exposition it serves, never an older one at its own URL).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from apimcp.gateway.runtime import Route

MCP_PREFIX = "/mcp/"
DEFAULT_ORGANIZATION = "default"


def canonical_path(exposition_id: str, organization: str, name: str | None) -> str:
    return f"/mcp/{organization}/{name}" if name is not None else f"/mcp/{exposition_id}"


def candidate_paths(route: Route) -> list[str]:
    """Every path `route` may answer at, canonical first (whether each leads to it depends on the others)."""
    paths = [route.canonical_path, f"/mcp/{route.exposition_id}"]
    paths.append(f"/mcp/{route.organization}/{route.service.replace(' ', '+')}/{route.version}")
    if route.name is not None and route.organization == DEFAULT_ORGANIZATION:
        paths.append(f"/mcp/{route.name}")
    return list(dict.fromkeys(paths))


@dataclass(frozen=True, slots=True)
class Routes:
    """Every way to reach an exposition; replaced whole, never mutated."""

    revision: int = -1
    by_id: Mapping[str, Route] = field(default_factory=dict)
    by_name: Mapping[tuple[str, str], Route] = field(default_factory=dict)
    by_service: Mapping[tuple[str, str, str], Route] = field(default_factory=dict)
    served: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per exposition id, the paths that lead to it in this table."""

    def resolve(self, path: str) -> tuple[Route | None, bool]:
        """The route a path names, and whether it is a service-coordinates path (non-canonical)."""
        parts = [unquote(p) for p in path[len(MCP_PREFIX) :].strip("/").split("/")]
        if len(parts) == 1:
            return self.by_id.get(parts[0]) or self.by_name.get((DEFAULT_ORGANIZATION, parts[0])), False
        if len(parts) == 2:
            return self.by_name.get((parts[0], parts[1])), False
        if len(parts) == 3:
            return self.by_service.get((parts[0], parts[1].replace("+", " "), parts[2])), True
        return None, False


def index(revision: int, routes: Iterable[Route], created: Mapping[str, str]) -> Routes:
    """The table of `routes`; `created` gives each exposition's creation time (the most recent of a service's
    expositions serves its version URL; ties go to the larger id)."""
    ordered = sorted(routes, key=lambda r: (created.get(r.exposition_id, ""), r.exposition_id))
    by_service = {(route.organization, route.service, route.version): route for route in ordered}
    table = Routes(
        revision=revision,
        by_id={route.exposition_id: route for route in ordered},
        by_name={(route.organization, route.name): route for route in ordered if route.name is not None},
        by_service=by_service,
    )
    served = {
        route.exposition_id: tuple(p for p in candidate_paths(route) if table.resolve(p)[0] is route)
        for route in ordered
    }
    return Routes(revision, table.by_id, table.by_name, table.by_service, served)
