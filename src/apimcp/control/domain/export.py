"""What an organization holds, read in one go for `apimcp export`: its services with their files, plans, the
public side of the secrets those plans use, expositions, policies and plan templates.

Secret values never leave: a secret is described by its kind, its public fields and the names of the values it
holds (so that an export can say which environment variables stand for them), never by the values.
"""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import GrpcBinding
from apimcp.control.crypto import KeySet
from apimcp.control.domain import secrets as stored_secrets
from apimcp.control.models import (
    Artifact,
    Exposition,
    GatewayGroup,
    Organization,
    Plan,
    PlanTemplate,
    Secret,
    Service,
)
from apimcp.importers.detection import detect_kind
from apimcp.importers.protobuf import looks_like_descriptor_set

PLAN_FIELDS = (
    "name", "service_id", "description", "backend_endpoint", "backend_timeout_ms", "include", "exclude",
    "secret_ids", "tls_secret_id", "inbound", "cache", "artifacts", "tool_prefix", "output_schemas",
    "header_policy", "audit", "rate_limit", "tasks", "tool_search", "code_mode", "trust_changes", "policies",
    "guardrails", "resilience", "fallback_endpoints", "read_only_tools",
)  # fmt: skip


def description_format(kind: str, content: bytes) -> str | None:
    """The file type of a service's main description (its file name's suffix), None when there is no file (an MCP
    server, a GraphQL endpoint introspected, a gRPC server reflected)."""
    if not content:
        return None
    if kind == "grpc":
        return "protoset" if looks_like_descriptor_set(content) else "proto"
    text = content.lstrip()
    if kind == "graphql":
        return "json" if text.startswith(b"{") else "graphql"
    if kind == "openapi" and detect_kind(content) == "openapi":
        return "json" if text.startswith(b"{") else "yaml"
    return "yaml"


def _grpc_service(service: Service) -> str | None:
    """Which service of its description a gRPC service is (`package.Service`), for a description declaring several."""
    if service.kind != "grpc":
        return None
    operations = decode_service(service.compiled).operations
    return next((op.binding.service for op in operations if isinstance(op.binding, GrpcBinding)), None)


def _service(session: Session, service: Service) -> dict[str, Any]:
    query = select(Artifact).where(Artifact.service_id == service.id)
    files = list(session.scalars(query.order_by(Artifact.created_at, Artifact.id)))
    main = next((a for a in files if a.role == "main"), None)
    content = main.content if main is not None else b""
    return {
        "id": service.id,
        "name": service.name,
        "version": service.version,
        "kind": service.kind,
        "source": main.source if main is not None else None,
        "format": description_format(service.kind, content),
        "grpc_service": _grpc_service(service),
        "content": base64.b64encode(content).decode(),
        "artifacts": [
            {"name": a.name, "kind": a.kind, "content": base64.b64encode(a.content).decode()}
            for a in files
            if a.role == "attached" and a.kind is not None  # one attached before artifacts were checked is unusable
        ],
    }


def _plan(plan: Plan) -> dict[str, Any]:
    exported = {"id": plan.id, **{field: getattr(plan, field) for field in PLAN_FIELDS}}
    # an inbound API key's hash checks the key: a viewer reading the export has no use for it
    exported["inbound"] = {key: value for key, value in (plan.inbound or {}).items() if key != "key_hash"}
    return exported


def _secret(keys: KeySet, secret: Secret) -> dict[str, Any]:
    held = stored_secrets.reveal(keys, secret)
    return {
        "id": secret.id,
        "name": secret.name,
        "kind": secret.kind,
        "fields": secret.fields,
        "values": sorted(name for name, value in held.items() if value),  # which, never what
    }


def organization_export(session: Session, keys: KeySet, organization_id: str) -> dict[str, Any]:
    """Everything `apimcp apply` could make again of the organization, in a stable order."""
    organization = session.get(Organization, organization_id)
    services = session.scalars(
        select(Service).where(Service.organization_id == organization_id).order_by(Service.name, Service.version)
    )
    plans = list(
        session.scalars(select(Plan).where(Plan.organization_id == organization_id).order_by(Plan.name, Plan.id))
    )
    used = {secret_id for plan in plans for secret_id in plan.secret_ids}
    used |= {plan.tls_secret_id for plan in plans if plan.tls_secret_id}
    used |= {plan.inbound["introspection_secret_id"] for plan in plans if plan.inbound.get("introspection_secret_id")}
    secrets = session.scalars(select(Secret).where(Secret.organization_id == organization_id, Secret.id.in_(used)))
    groups = {
        group.id: group.name
        for group in session.scalars(select(GatewayGroup).where(GatewayGroup.organization_id == organization_id))
    }
    templates = session.scalars(
        select(PlanTemplate).where(PlanTemplate.organization_id == organization_id).order_by(PlanTemplate.name)
    )
    exposed = select(Exposition).where(Exposition.organization_id == organization_id)
    expositions = session.scalars(exposed.order_by(Exposition.name, Exposition.id))
    return {
        "organization": organization.name if organization is not None else None,
        "policies": organization.policies if organization is not None else None,
        "services": [_service(session, service) for service in services],
        "plans": [_plan(plan) for plan in plans],
        "secrets": sorted((_secret(keys, secret) for secret in secrets), key=lambda s: (s["name"], s["id"])),
        "expositions": [
            {"id": e.id, "name": e.name, "plan_id": e.plan_id, "group": groups.get(e.group_id)} for e in expositions
        ],
        "templates": [{"name": t.name, "description": t.description, "settings": t.settings} for t in templates],
    }
