"""The gateway's live state, rebuilt from each snapshot and swapped in one assignment.

Applying a snapshot decodes the compiled services it does not hold yet (shared
by every exposition of the same service), builds the expositions whose plan or
service changed, keeps the others untouched, and replaces the routing table at
once: a request sees the old table or the new one, never a mix. An exposition
that changes keeps its endpoint, so sessions and open streams survive, and its
listeners hear that the tool list changed. Sealed secrets are opened with the
gateway's key before an exposition is compared with the one served: they are
sealed afresh in every snapshot, what they hold is what counts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
import orjson

from apimcp.artifacts.bundle import merge
from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from apimcp.backends.base import Backend
from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import Service
from apimcp.catalog.naming import fit
from apimcp.catalog.selection import select
from apimcp.gateway.backends import BackendFactory
from apimcp.gateway.composition import CrossService, Extras
from apimcp.gateway.exposition import ExpositionHandler, ExpositionSettings, ToolSet
from apimcp.gateway.resource_loading import BackendLoader
from apimcp.gateway.tool_entries import ToolEntry
from apimcp.protocol import CacheHint, EndpointOptions, McpEndpoint
from apimcp.safety.addresses import AddressPolicy
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import SealError, open_exposition

log = logging.getLogger("apimcp.gateway")


@dataclass(frozen=True, slots=True)
class Route:
    exposition_id: str
    organization: str
    name: str | None
    service: str
    version: str
    endpoint: McpEndpoint
    api_key_hash: str | None
    backends: tuple[Backend, ...] = ()
    """What the exposition calls (the gateway lets go of the connections no route uses)."""

    @property
    def canonical_path(self) -> str:
        if self.name is not None:
            return f"/mcp/{self.organization}/{self.name}"
        return f"/mcp/{self.exposition_id}"


@dataclass(frozen=True, slots=True)
class Routes:
    """Every way to reach an exposition; replaced whole, never mutated."""

    revision: int = -1
    by_id: Mapping[str, Route] = field(default_factory=dict)
    by_name: Mapping[tuple[str, str], Route] = field(default_factory=dict)
    by_service: Mapping[tuple[str, str, str], Route] = field(default_factory=dict)


class GatewayRuntime:
    """Builds expositions from snapshots and routes requests to them."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        options: EndpointOptions,
        *,
        key: GatewayKey | None = None,
        fetch_policy: AddressPolicy | None = None,
        script_limits: ScriptLimits | None = None,
    ) -> None:
        """`fetch_policy`: which addresses OAuth token endpoints and remote resource contents may be at (default:
        public ones only); `script_limits`: what one run of a scripted custom tool may cost."""
        self._backends = BackendFactory(session, fetch_policy=fetch_policy)
        self._options = options
        self._key = key
        """Opens the sealed secrets of snapshots (a gateway that follows a control plane holds one)."""
        self._services: dict[str, Service] = {}
        self._built: dict[str, tuple[bytes, Route]] = {}
        self._tool_sets: dict[tuple[Any, ...], ToolSet] = {}
        self._script_limits = script_limits or ScriptLimits()
        self._scripts: ScriptRunner | None = None
        """Started with the first exposition that has scripted custom tools (it owns threads)."""
        self.routes = Routes()

    def known_services(self) -> list[str]:
        return list(self._services)

    def apply(self, snapshot: Mapping[str, Any], *, strict: bool = False) -> None:
        """Serve `snapshot` from now on. An exposition that cannot be built is logged and skipped
        (its previous version, if any, keeps serving); with `strict`, the error is raised instead."""
        for digest, compiled in snapshot.get("services", {}).items():
            if digest not in self._services:
                self._services[digest] = compiled if isinstance(compiled, Service) else decode_service(compiled)
        built: dict[str, tuple[bytes, Route]] = {}
        for exposition in snapshot["expositions"]:
            previous = self._built.get(exposition["id"])
            try:
                opened = open_exposition(exposition, self._key)
                fingerprint = orjson.dumps(opened, option=orjson.OPT_SORT_KEYS)
                if previous is not None and previous[0] == fingerprint:
                    built[exposition["id"]] = previous
                    continue
                route = self._route(opened, previous[1] if previous is not None else None)
            except Exception as exc:
                if strict:
                    raise
                if isinstance(exc, SealError):  # says which secret and why; a traceback would add nothing
                    log.error("exposition %s could not be built; it is not served: %s", exposition["id"], exc)
                else:
                    log.exception("exposition %s could not be built; it is not served", exposition["id"])
                if previous is not None:
                    built[exposition["id"]] = previous  # keep serving what worked
                continue
            built[exposition["id"]] = (fingerprint, route)
        for exposition_id, (_, route) in self._built.items():
            if exposition_id not in built:
                route.endpoint.shutdown()
        self._built = built
        self._backends.retain(backend for _, route in built.values() for backend in route.backends)
        used = {m["service"]["hash"] for exposition in snapshot["expositions"] for m in exposition["members"]}
        self._services = {digest: service for digest, service in self._services.items() if digest in used}
        self._tool_sets = {key: tools for key, tools in self._tool_sets.items() if key[0] in used}
        self.routes = _index(snapshot.get("revision", 0), [route for _, route in built.values()], snapshot)

    def _route(self, exposition: Mapping[str, Any], previous: Route | None) -> Route:
        members: list[tuple[ToolSet, Backend]] = []
        for member in exposition["members"]:
            service = self._services[member["service"]["hash"]]
            backend = self._backends.build(service, member)
            members.append((self._tool_set(service, member, exposition["output_schemas"]), backend))
        settings = ExpositionSettings(
            name=exposition["name"] or exposition["id"],
            title=exposition.get("title"),
            instructions=exposition.get("instructions"),
            cache_hints={m: CacheHint(ttl_ms=h["ttl_ms"], scope=h["scope"]) for m, h in exposition["cache"].items()},
        )
        bundle = merge(artifact for member in exposition["members"] for artifact in member.get("artifacts", ()))
        if self._scripts is None and any("script" in spec for spec in bundle.custom_tools.values()):
            self._scripts = ScriptRunner(self._script_limits)
        cross_service = self._cross_service(exposition["organization"])
        extras = Extras(bundle=bundle, runner=self._scripts, cross_service=cross_service)
        loader = BackendLoader(members[0][1] if members else None, self._backends.guarded_session)
        handler = ExpositionHandler(settings, members, extras, loader)
        if previous is not None:
            previous.endpoint.replace_handler(handler)
            endpoint = previous.endpoint
        else:
            endpoint = McpEndpoint(handler, self._options, endpoint_id=exposition["id"])
        inbound = exposition["inbound"]
        first = exposition["members"][0]["service"]
        return Route(
            exposition_id=exposition["id"],
            organization=exposition["organization"],
            name=exposition["name"],
            service=first["name"],
            version=first["version"],
            endpoint=endpoint,
            api_key_hash=inbound.get("key_hash") if inbound.get("mode") == "api_key" else None,
            backends=tuple(backend for _, backend in members),
        )

    def _tool_set(self, service: Service, member: Mapping[str, Any], output_schemas: bool) -> ToolSet:
        """The tools of a member's selection, shared with every exposition that selects the same."""
        key = (
            member["service"]["hash"],
            tuple(member["include"]),
            tuple(member["exclude"]),
            member["tool_prefix"],
            output_schemas,
        )
        tools = self._tool_sets.get(key)
        if tools is None:
            operations = select(service.operations, member["include"], member["exclude"])
            if member["tool_prefix"]:
                operations = [replace(op, tool_name=fit(op.tool_name, member["tool_prefix"])) for op in operations]
            tools = self._tool_sets[key] = ToolSet(operations, output_schemas)
        return tools

    def _cross_service(self, organization: str) -> CrossService:
        """How scripts of `organization` reach a tool of another of its services (`Name:version`): through the
        exposition that serves that service, as it is when the call is made."""

        def find(service: str, tool: str) -> ToolEntry | None:
            name, colon, version = service.rpartition(":")
            route = self.routes.by_service.get((organization, name, version)) if colon else None
            handler = route.endpoint.handler if route is not None else None
            return handler.internal_tool(tool) if isinstance(handler, ExpositionHandler) else None

        return find

    def shutdown(self) -> None:
        for _, route in self._built.values():
            route.endpoint.shutdown()

    async def close(self) -> None:
        """End every stream, then close the connections backends hold."""
        self.shutdown()
        if self._scripts is not None:
            self._scripts.close()
        await self._backends.close()


def _index(revision: int, routes: list[Route], snapshot: Mapping[str, Any]) -> Routes:
    created = {e["id"]: e["created_at"] for e in snapshot["expositions"]}
    by_service: dict[tuple[str, str, str], Route] = {}
    for route in sorted(routes, key=lambda r: (created.get(r.exposition_id, ""), r.exposition_id)):
        by_service[(route.organization, route.service, route.version)] = route  # the most recent wins
    return Routes(
        revision=revision,
        by_id={route.exposition_id: route for route in routes},
        by_name={(route.organization, route.name): route for route in routes if route.name is not None},
        by_service=by_service,
    )
