"""A configuration file served through the same runtime as the control plane's snapshots.

The YAML of `apimcp serve config.yaml` becomes one fixed snapshot: each
configured exposition, in the `default` organization, has its name as id and is
served at `/mcp/{name}` (and at `/mcp/default/{service}/{version}`). Services are
handed over already imported; credentials are read from the environment when the
file is loaded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import aiohttp

from apimcp.artifacts.filter_runner import FilterLimits
from apimcp.artifacts.scripting import ScriptLimits
from apimcp.backends.credentials import ApiKey, Basic, Bearer, Credentials
from apimcp.codemode.limits import CodeModeLimits
from apimcp.gateway.app import GatewayApp
from apimcp.gateway.plan import GatewayPlan, PlannedService
from apimcp.gateway.routing import DEFAULT_ORGANIZATION
from apimcp.gateway.runtime import GatewayRuntime
from apimcp.protocol import (
    NO_RELAY,
    EndpointOptions,
    MemoryEventStore,
    MemorySessionStore,
    RequestStateSealer,
    SessionLimits,
    TransportSecurity,
)
from apimcp.protocol.limits import EndpointLimits
from apimcp.protocol.tasks.store import MemoryTaskStore
from apimcp.shaping.limits import ShapingLimits
from apimcp.state import GatewayState

if TYPE_CHECKING:
    from apimcp.state.backend import OpenedState


def endpoint_options(
    plan: GatewayPlan,
    limits: EndpointLimits | None = None,
    sessions: SessionLimits | None = None,
    shared: OpenedState | None = None,
) -> EndpointOptions:
    """The endpoints' options a configuration's `server` section gives, within these limits (sessions in
    the `shared` state when given, a Redis say; in this process's memory otherwise)."""
    server = plan.config.server
    keys = list(plan.request_state_keys)
    return EndpointOptions(
        security=TransportSecurity.for_hosts(server.allowed_hosts, server.cors_origins),
        request_state=RequestStateSealer(keys or None, used=shared.used_states if shared is not None else None),
        limits=limits or EndpointLimits(),
        sessions=shared.sessions if shared is not None else MemorySessionStore.with_limits(sessions or SessionLimits()),
        relay=shared.relay if shared is not None else NO_RELAY,
        events=shared.events if shared is not None else MemoryEventStore(),
        tasks=shared.tasks if shared is not None else MemoryTaskStore(),
    )


def snapshot_of(plan: GatewayPlan) -> dict[str, Any]:
    """The snapshot serving `plan`: one exposition per configured exposition."""
    expositions = []
    for exposition in plan.expositions:
        config = exposition.config
        expositions.append(
            {
                "id": exposition.name,
                "name": None,  # so `/mcp/{name}` (the id) stays the canonical path, as in Step 2
                "organization": DEFAULT_ORGANIZATION,
                "created_at": "",
                "title": config.title,
                "instructions": config.instructions,
                "cache": {m: {"ttl_ms": h.ttl_ms, "scope": h.scope} for m, h in config.cache.items()},
                "output_schemas": config.output_schemas,
                "inbound": config.auth.inbound() if config.auth is not None else {"mode": "none"},
                "audit": config.audit,
                "rate_limit": config.rate_limit,
                "tasks": config.tasks,
                "tool_search": config.tool_search,
                "code_mode": config.code_mode,
                "organization_policies": plan.config.policies,
                "policies": config.policies,
                "guardrails": config.guardrails,
                "resilience": config.resilience,
                "members": [_member(planned) for planned in exposition.services],
            }
        )
    # the plan selected each service's operations already (`plan_service`), as the file's patterns say
    services = {key: replace(planned.service, operations=planned.operations) for key, planned in plan.services.items()}
    return {"format": 1, "revision": 0, "services": services, "expositions": expositions}


def _member(planned: PlannedService) -> dict[str, Any]:
    config = planned.config
    return {
        "service": {
            "id": planned.key,
            "name": planned.service.name,
            "version": planned.service.version,
            "hash": planned.key,
        },
        "plan": planned.key,
        "backend_endpoint": config.backend,
        "fallback_endpoints": list(config.fallbacks),
        "backend_timeout_ms": round(config.timeout * 1000),
        "max_response_bytes": config.max_response_bytes,
        "include": [],  # the service carries the operations the plan selected
        "exclude": [],
        "tool_prefix": "",  # the importer already applied the configured prefix
        "credentials": [
            *(_credentials(c) for c in planned.credentials),
            *(dict(c) for c in planned.clients),
            *(dict(c) for c in planned.per_user),
        ],
        "header_policy": config.header_policy,
        "backend_tls": planned.tls,
        "artifacts": [dict(artifact) for artifact in planned.artifacts],
    }


def _credentials(credentials: Credentials) -> dict[str, Any]:
    if isinstance(credentials, Bearer):
        return {"kind": "bearer", "fields": {}, "values": {"token": credentials.token}}
    if isinstance(credentials, Basic):
        return {
            "kind": "basic",
            "fields": {"username": credentials.username},
            "values": {"password": credentials.password},
        }
    assert isinstance(credentials, ApiKey)
    fields = {"name": credentials.name, "location": credentials.location}
    return {"kind": "api_key", "fields": fields, "values": {"value": credentials.value}}


def build_gateway(
    plan: GatewayPlan,
    session: aiohttp.ClientSession,
    options: EndpointOptions | None = None,
    script_limits: ScriptLimits | None = None,
    state: GatewayState | None = None,
    filter_limits: FilterLimits | None = None,
    shaping_limits: ShapingLimits | None = None,
    code_limits: CodeModeLimits | None = None,
) -> GatewayApp:
    """The gateway serving `plan`, calling backends through `session` (created in the serving loop)."""
    server = plan.config.server
    runtime = GatewayRuntime(
        session,
        options or endpoint_options(plan),
        fetch_policy=server.fetch_policy(),
        script_limits=script_limits,
        code_limits=code_limits,
        filter_limits=filter_limits,
        shaping_limits=shaping_limits,
        public_url=server.public_url,
        state=state,
        commands=plan.commands,
    )
    runtime.apply(snapshot_of(plan), strict=True)
    return GatewayApp(runtime)
