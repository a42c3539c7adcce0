"""What a gateway needs to serve: every exposition of the groups it belongs to, compiled.

A snapshot carries, for each exposition, its plan (backend, selection, hints,
inbound security, credentials) and a reference to its compiled service;
compiled services travel once, by content hash, and not at all when the
gateway says it has them already. Nothing in it needs parsing an API description.
Credentials are sealed to the gateway's key (`apimcp.sealing`): whoever reads a
snapshot without that key's private half learns no secret.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control import changes
from apimcp.control.crypto import KeySet
from apimcp.control.domain import groups, secrets, upstream_changes
from apimcp.control.models import Artifact, Exposition, GatewayGroup, Organization, Plan, Secret, Service, as_utc
from apimcp.control.secret_kinds import PER_USER
from apimcp.sealing.keys import GatewayPublicKey
from apimcp.sealing.snapshots import seal_exposition

FORMAT = 1


def to_json(snapshot: Mapping[str, Any]) -> bytes:
    """The snapshot on the wire: compiled services are embedded without re-encoding them."""
    services = {digest: orjson.Fragment(compiled) for digest, compiled in snapshot["services"].items()}
    return orjson.dumps({**snapshot, "services": services})


def build(
    session: Session,
    keys: KeySet,
    *,
    organization_id: str | None,
    labels: Mapping[str, str],
    recipient: GatewayPublicKey,
    known_services: Collection[str] = (),
) -> dict[str, Any]:
    """The snapshot for a gateway of `organization_id` (None: every organization) with these labels, its secrets
    sealed to `recipient`."""
    revision = changes.latest(session, organization_id)
    query = (
        select(Exposition, Plan, Service, GatewayGroup, Organization)
        .join(Plan, Exposition.plan_id == Plan.id)
        .join(Service, Plan.service_id == Service.id)
        .join(GatewayGroup, Exposition.group_id == GatewayGroup.id)
        .join(Organization, Exposition.organization_id == Organization.id)
        .order_by(Exposition.id)
    )
    if organization_id is not None:
        query = query.where(Exposition.organization_id == organization_id)
    services: dict[str, Any] = {}
    expositions = []
    for exposition, plan, service, group, organization in session.execute(query):
        if not groups.matches(group.labels, labels):
            continue
        digest, compiled = upstream_changes.served_to(plan.trust_changes, service)
        if digest not in known_services and digest not in services:
            services[digest] = compiled  # JSON bytes: sent as is, decoded by the gateway
        entry = {
            "id": exposition.id,
            "name": exposition.name,
            "organization": organization.name,
            "created_at": as_utc(exposition.created_at).isoformat(),
            "title": f"{service.name} {service.version}",
            "instructions": service.description,
            "cache": plan.cache,
            "output_schemas": plan.output_schemas,
            "inbound": _inbound(session, keys, plan),
            "audit": plan.audit,
            "rate_limit": plan.rate_limit,
            "tasks": plan.tasks,
            "tool_search": plan.tool_search,
            "code_mode": plan.code_mode,
            "organization_policies": organization.policies,
            "policies": plan.policies,
            "guardrails": plan.guardrails,
            "resilience": plan.resilience,
            "members": [_member(session, keys, plan, service)],
        }
        expositions.append(seal_exposition(entry, recipient))
    return {"format": FORMAT, "revision": revision, "services": services, "expositions": expositions}


def _inbound(session: Session, keys: KeySet, plan: Plan) -> dict[str, Any]:
    """Who may call: an API key's hash, or OAuth settings with the introspection client (sealed below)."""
    inbound = plan.inbound
    mode = inbound.get("mode", "none")
    if mode == "api_key":
        return {"mode": mode, "key_hash": inbound["key_hash"]}
    if mode != "oauth":
        return {"mode": "none"}
    out: dict[str, Any] = {"mode": "oauth", "oauth": inbound["oauth"]}
    secret_id = inbound.get("introspection_secret_id")
    secret = session.get(Secret, secret_id) if secret_id else None
    if secret is not None:
        out["introspection"] = {"fields": secret.fields, "values": secrets.reveal(keys, secret)}
    return out


def _member(session: Session, keys: KeySet, plan: Plan, service: Service) -> dict[str, Any]:
    """One service of an exposition, with how to call it."""
    credentials = []  # every call carries all of them
    for secret_id in plan.secret_ids:
        secret = session.get(Secret, secret_id)
        if secret is not None:
            credential = {"kind": secret.kind, "fields": secret.fields, "values": secrets.reveal(keys, secret)}
            if secret.kind in PER_USER:  # users' values are kept under the secret's id, and asked for by its name
                credential.update(id=secret.id, name=secret.name)
            credentials.append(credential)
    tls = None
    if plan.tls_secret_id is not None:
        secret = session.get(Secret, plan.tls_secret_id)
        if secret is not None:
            tls = {**secret.fields, **secrets.reveal(keys, secret)}  # ca, certificate, private_key (PEM)
    return {
        "service": {
            "id": service.id,
            "name": service.name,
            "version": service.version,
            "hash": upstream_changes.served_to(plan.trust_changes, service)[0],
        },
        "plan": plan.id,
        "backend_endpoint": plan.backend_endpoint,
        "fallback_endpoints": plan.fallback_endpoints or [],
        "backend_timeout_ms": plan.backend_timeout_ms,
        "include": plan.include,
        "exclude": plan.exclude,
        "tool_prefix": plan.tool_prefix,
        "read_only_tools": plan.read_only_tools,
        "credentials": credentials,
        "header_policy": plan.header_policy,
        "backend_tls": tls,
        "artifacts": _artifacts(session, plan, service),
    }


def _artifacts(session: Session, plan: Plan, service: Service) -> list[dict[str, Any]]:
    """The attached artifacts the plan selects (all when it names none), validated documents in attachment
    order: the gateway merges them, first attached wins."""
    query = (
        select(Artifact)
        .where(Artifact.service_id == service.id, Artifact.role == "attached", Artifact.kind.is_not(None))
        .order_by(Artifact.created_at, Artifact.id)
    )
    selected = set(plan.artifacts)
    return [
        {"name": a.name, "kind": a.kind, "document": a.document}
        for a in session.scalars(query)
        if not selected or a.name in selected
    ]
