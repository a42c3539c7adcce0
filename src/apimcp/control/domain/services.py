"""Services: imported from an upload or a URL, re-imported in place, with their artifacts."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.artifacts.documents import ArtifactError, check_against, read_document
from apimcp.catalog.codec import decode_service, encode_service
from apimcp.catalog.model import Service as CatalogService
from apimcp.control import changes
from apimcp.control.domain import upstream_changes
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Conflict, Forbidden, Invalid
from apimcp.control.models import Artifact, Exposition, Plan, Service
from apimcp.federation.listing import import_upstream
from apimcp.importers.detection import KINDS, DescriptionKind, detect_kind, kind_of_url
from apimcp.importers.errors import SpecError, unreadable_as_spec_errors
from apimcp.importers.graphql import DEFAULT_DEPTH, import_graphql
from apimcp.importers.openapi import SchemaLimits, import_openapi
from apimcp.importers.openapi.loading import fetch, is_url, parse
from apimcp.importers.protobuf import import_protobuf
from apimcp.safety.fetch import Fetcher
from apimcp.safety.shown_urls import shown_location
from apimcp.safety.yaml_loading import YamlLimits


@dataclass(frozen=True, slots=True)
class Imported:
    service: Service
    created: bool
    catalog: CatalogService
    held: tuple[upstream_changes.DefinitionChange, ...] = ()
    """What an MCP server changed since it was imported, held until an admin accepts it (nothing is served of it)."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """How to read a description, besides the description itself."""

    kind: DescriptionKind | None = None
    """openapi, graphql, grpc or mcp (an MCP server's URL); detected from the content (or a grpc:// URL) when None."""
    name: str | None = None
    version: str | None = None
    introspect: bool = False
    """GraphQL: the URL is a live endpoint, asked for its schema."""
    grpc_service: str | None = None
    """gRPC: which service, when the description declares several."""
    graphql_depth: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Credentials for reading a URL (fetch, introspection, reflection), from a secret; never stored."""


def import_service(
    session: Session,
    organization_id: str,
    *,
    content: bytes | None = None,
    filename: str | None = None,
    url: str | None = None,
    options: ImportOptions | None = None,
    fetcher: Fetcher | None = None,
    yaml_limits: YamlLimits | None = None,
    schema_limits: SchemaLimits | None = None,
    may_move_secrets: bool = True,
) -> Imported:
    """Import an API description; a service of the same name and version is updated in place. URLs (the
    description's, those it references, an endpoint to introspect or reflect) are read by `fetcher`
    (default: public addresses only)."""
    if (content is None) == (url is None):
        raise Invalid("give either a file or a URL", field="file")
    options = options or ImportOptions()
    if options.kind is not None and options.kind not in KINDS:
        raise Invalid(f"kind must be one of {', '.join(KINDS)}", field="kind")
    fetcher = fetcher or Fetcher()
    field = "url" if url is not None else "file"
    try:
        if url is not None:
            content, source, kind = _read_url(url, options, fetcher)
        else:
            assert content is not None
            if len(content) > fetcher.limits.max_bytes:
                raise Invalid(f"the file is larger than the {fetcher.limits.max_bytes} bytes allowed", field="file")
            if not content:
                raise Invalid("the file is empty", field="file")
            source = filename or "upload"
            if options.kind == "mcp":
                raise Invalid("an MCP server is imported from its URL, not from a file", field="file")
            kind = options.kind or detect_kind(content)
        with unreadable_as_spec_errors(source):
            catalog = _catalog(kind, content, source, url is not None, options, fetcher, yaml_limits, schema_limits)
    except SpecError as exc:
        raise Invalid(str(exc), field=field) from exc
    recorded = shown_location(source)  # stored and shown: the URL's credentials served the fetch only
    catalog = replace(catalog, source=recorded)
    compiled = encode_service(catalog)
    service = session.scalar(
        select(Service).where(
            Service.organization_id == organization_id,
            Service.name == catalog.name,
            Service.version == catalog.version,
        )
    )
    created = service is None
    if service is not None and not may_move_secrets and _sends_secrets_to_its_servers(session, service):
        raise Forbidden(
            f"{service.name} {service.version} has plans that send secrets to the servers its description names: "
            "updating it needs an admin token (a new description could send them elsewhere)"
        )
    if service is not None and service.kind != kind:
        used = session.scalar(select(Plan.id).where(Plan.service_id == service.id).limit(1))
        if used is not None:
            raise Conflict(
                f"{service.name} {service.version} is a {service.kind} service with plans; it cannot become a "
                f"{kind} service: import it under another name or version"
            )
    if service is None:
        service = Service(organization_id=organization_id, name=catalog.name, version=catalog.version)
        session.add(service)
    held: list[upstream_changes.DefinitionChange] = []
    if not created and kind == "mcp" and service.kind == "mcp":
        held = upstream_changes.compare(decode_service(service.compiled), catalog)
    service.kind = kind
    if held:  # served as before until an admin accepts what the upstream changed
        upstream_changes.hold(service, compiled, held)
    else:
        upstream_changes.serve(service, compiled, catalog)
        upstream_changes.reject_held(service)
    session.flush()
    main = session.scalar(select(Artifact).where(Artifact.service_id == service.id, Artifact.role == "main"))
    if main is None:
        main = Artifact(organization_id=organization_id, service_id=service.id, role="main")
        session.add(main)
    main.name = f"{service.name}-{service.version}-description"[:200]
    main.content = content
    main.content_hash = _sha(content)
    main.source = recorded
    changes.record(session, organization_id, "service", service.id)
    return Imported(service, created, catalog, tuple(held))


def _sends_secrets_to_its_servers(session: Session, service: Service) -> bool:
    """Whether a plan of `service` carries secrets and calls the servers its description names (no backend)."""
    relying = session.scalars(select(Plan).where(Plan.service_id == service.id, Plan.backend_endpoint.is_(None)))
    return any(plan.secret_ids or plan.tls_secret_id for plan in relying)


def _read_url(url: str, options: ImportOptions, fetcher: Fetcher) -> tuple[bytes, str, DescriptionKind]:
    """The description at `url`, and its kind. A live GraphQL endpoint or a gRPC server (reflection)
    is asked by the importer itself: there is then no content to keep (the main artifact is empty)."""
    kind = options.kind or kind_of_url(url)
    if kind == "mcp":
        if not is_url(url):
            raise Invalid("an MCP server's URL is an http:// or https:// URL", field="url")
        return b"", url, "mcp"
    if kind == "grpc" and kind_of_url(url):
        return b"", url, "grpc"
    if not is_url(url):
        raise Invalid(
            "only http:// and https:// URLs (or grpc:// and grpcs:// for reflection) can be imported", field="url"
        )
    if options.introspect:
        if kind not in (None, "graphql"):
            raise Invalid("introspect applies to GraphQL endpoints", field="introspect")
        return b"", url, "graphql"
    content = fetch(url, fetcher, options.headers)
    return content, url, kind or detect_kind(content)


def _catalog(
    kind: DescriptionKind,
    content: bytes,
    source: str,
    from_url: bool,
    options: ImportOptions,
    fetcher: Fetcher,
    yaml_limits: YamlLimits | None,
    schema_limits: SchemaLimits | None,
) -> CatalogService:
    if kind == "graphql":
        if not options.name or not options.version:
            raise Invalid("a GraphQL schema names no service: give its name and version", field="name")
        live = options.introspect
        return import_graphql(
            source,
            name=options.name,
            version=options.version,
            content=None if live else content,
            introspect=live,
            headers=options.headers,
            fetcher=fetcher,
            depth=options.graphql_depth or DEFAULT_DEPTH,
        )
    if kind == "mcp":
        return import_upstream(
            source, name=options.name, version=options.version, headers=options.headers, fetcher=fetcher
        )
    if kind == "grpc":
        reflected = from_url and kind_of_url(source) is not None
        return import_protobuf(
            source,
            content=None if reflected else content,  # an upload is never read from disk, whatever its name
            service=options.grpc_service,
            name=options.name,
            version=options.version,
            timeout_seconds=fetcher.limits.timeout_seconds,
            metadata=[(name.lower(), value) for name, value in options.headers.items()],
            fetcher=fetcher,
        )
    return import_openapi(
        source,
        name=options.name,
        version=options.version,
        fetcher=fetcher,
        document=parse(content, source, yaml_limits),
        external_references=from_url,
        headers=options.headers,
        yaml_limits=yaml_limits,
        schema_limits=schema_limits,
    )


def read_artifact(url: str, fetcher: Fetcher | None = None) -> tuple[bytes, str]:
    """What `url` holds, read with the importer's rules (the fetch policy, size and time limits), and the
    name the URL suggests for it."""
    if not is_url(url):
        raise Invalid("only http:// and https:// URLs can be attached", field="url")
    try:
        content = fetch(url, fetcher or Fetcher())
    except SpecError as exc:
        raise Invalid(str(exc), field="url") from exc
    return content, url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "artifact"


def attach(
    session: Session,
    organization_id: str,
    service_id: str,
    name: str,
    content: bytes,
    source: str | None = None,
    yaml_limits: YamlLimits | None = None,
) -> Artifact:
    """Attach (or replace, keeping its id and place) a named artifact document of a service, refused unless it
    is valid and every tool it names is one of the service's (`apimcp.artifacts.documents`): nothing is stored
    then. `source` is the URL it was read from, if any."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    artifact = session.scalar(select(Artifact).where(Artifact.service_id == service.id, Artifact.name == name))
    if artifact is not None and artifact.role == "main":
        raise Conflict(f"{name!r} is the service's main description", field="name")
    try:
        document = read_document(content, name, yaml_limits)
        check_against(
            document,
            decode_service(service.compiled).operations,
            _custom_tools_of_others(session, service.id, name),
            service=(service.name, service.version),
        )
    except ArtifactError as exc:
        raise Invalid(str(exc), field="url" if source is not None else "file") from exc
    if artifact is None:
        artifact = Artifact(organization_id=organization_id, service_id=service.id, name=name, role="attached")
        session.add(artifact)
    artifact.content = content
    artifact.content_hash = _sha(content)
    artifact.source = shown_location(source) if source is not None else None
    artifact.kind = document.kind
    artifact.capabilities = list(document.capabilities)
    artifact.document = dict(document.body)
    session.flush()
    changes.record(session, organization_id, "artifact", artifact.id)
    return artifact


def _custom_tools_of_others(session: Session, service_id: str, name: str) -> set[str]:
    """The custom tools the service's other artifacts declare (filters and MCP Apps may name them)."""
    declared = session.scalars(
        select(Artifact.capabilities).where(
            Artifact.service_id == service_id, Artifact.kind == "CustomTools", Artifact.name != name
        )
    )
    return {tool for capabilities in declared for tool in capabilities}


def artifacts(session: Session, organization_id: str, service_id: str) -> list[Artifact]:
    """A service's artifacts in attachment order (its main description first)."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    query = select(Artifact).where(Artifact.service_id == service.id)
    return list(session.scalars(query.order_by(Artifact.created_at, Artifact.id)))


@dataclass(frozen=True, slots=True)
class ImpactedPlan:
    id: str
    name: str
    falls_back_to_all: bool
    """The plan selected no other artifact: it now serves all of them (an empty selection means all)."""


@dataclass(frozen=True, slots=True)
class ArtifactDeletion:
    artifact_id: str
    artifact_name: str
    impacted_plans: tuple[ImpactedPlan, ...]
    """The plans that selected the artifact; it is removed from their selection."""


def delete_artifact(session: Session, organization_id: str, artifact_id: str) -> ArtifactDeletion:
    """Detach an artifact, and take it out of the plans that select it (each recorded as a plan change, so
    gateways serving them resync)."""
    artifact = get_owned(session, Artifact, organization_id, artifact_id, "artifact")
    if artifact.role == "main":
        raise Conflict("the main description cannot be detached; delete the service instead")
    impacted = []
    for plan in session.scalars(select(Plan).where(Plan.service_id == artifact.service_id).order_by(Plan.name)):
        if artifact.name not in plan.artifacts:
            continue
        plan.artifacts = [selected for selected in plan.artifacts if selected != artifact.name]
        impacted.append(ImpactedPlan(plan.id, plan.name, falls_back_to_all=not plan.artifacts))
        changes.record(session, organization_id, "plan", plan.id)
    session.delete(artifact)
    changes.record(session, organization_id, "artifact", artifact.id)
    return ArtifactDeletion(artifact.id, artifact.name, tuple(impacted))


def listed(session: Session, organization_id: str) -> list[Service]:
    return list(
        session.scalars(
            select(Service).where(Service.organization_id == organization_id).order_by(Service.name, Service.version)
        )
    )


def delete(session: Session, organization_id: str, service_id: str) -> None:
    """Delete a service with its artifacts, plans and expositions."""
    service = get_owned(session, Service, organization_id, service_id, "service")
    plan_ids = list(session.scalars(select(Plan.id).where(Plan.service_id == service.id)))
    for exposition in session.scalars(select(Exposition).where(Exposition.plan_id.in_(plan_ids))):
        session.delete(exposition)
    for plan in session.scalars(select(Plan).where(Plan.service_id == service.id)):
        session.delete(plan)
    session.delete(service)
    changes.record(session, organization_id, "service", service_id)
