"""Services and their artifacts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import UploadFile as FormFile
from starlette.exceptions import HTTPException

from apimcp.artifacts.documents import KINDS as ARTIFACT_KINDS
from apimcp.artifacts.documents import schema_text
from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import Operation
from apimcp.control.api.auth import DbSession, Plane, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import (
    ArtifactByUrl,
    ArtifactDeletionView,
    ArtifactView,
    DefinitionChangeView,
    HeldChanges,
    ImportByUrl,
    ImportedService,
    ImportOptionsForm,
    OperationView,
    ServiceDetail,
    ServiceView,
    UpstreamHealthView,
    view,
)
from apimcp.control.domain import gateways, secrets, services, tokens, upstream_changes
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Invalid, NotFound
from apimcp.control.import_pool import ImportsBusy
from apimcp.control.models import Artifact, Service
from apimcp.control.plane import ControlPlane

router = APIRouter(tags=["services"])

# The upload route reads its form by hand (see attach_artifact); its documented body:
_ARTIFACT_UPLOAD = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {"type": "string", "format": "binary", "description": "a YAML or JSON artifact"},
                    "name": {"type": "string", "description": "its name (default: the file's)"},
                },
            }
        }
    },
}
T = TypeVar("T")


async def in_import_pool(plane: ControlPlane, work: Callable[[], T]) -> T:
    """Run blocking import work (fetching, parsing) on the import workers: never in the thread pool the other
    routes share, so that slow imports cannot starve them. 503 when the import capacity is used up."""
    try:
        return await plane.imports.run(work)
    except ImportsBusy as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": str(exc.retry_after_seconds)}) from None


@router.post("/services", response_model=ImportedService, status_code=status.HTTP_201_CREATED)
async def import_service(request: Request, caller: UserCaller, session: DbSession, plane: Plane) -> ImportedService:
    """Import an API description: multipart (`file`, optional `name`, `version`, `kind`, `grpc_service`,
    `graphql_depth`) or JSON `{url, ...the same, introspect}`.

    The kind (openapi, graphql, grpc or mcp) is detected when not given: OpenAPI 2/3 in JSON or YAML,
    GraphQL SDL or introspection JSON, a .proto file or a binary FileDescriptorSet; a grpc:// or
    grpcs:// URL asks the server by reflection, and `introspect` asks a live GraphQL endpoint; with kind
    `mcp` the URL is an MCP server (Streamable HTTP, either era), whose tools are read.
    A service with the same name and version is updated in place.
    """
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        async with request.form() as form:  # closes the uploaded files' spools
            upload = form.get("file")
            if not isinstance(upload, FormFile):  # request.form() gives Starlette's class, not FastAPI's subclass
                raise Invalid("the form needs a `file` part", field="file")
            content = await upload.read()
            filename = upload.filename or "upload"
            fields = {key: value for key in _FORM_FIELDS if isinstance(value := form.get(key), str) and value}
        try:
            body = ImportOptionsForm.model_validate(fields)
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from exc
        options = body.options()
        imported = await in_import_pool(
            plane,
            lambda: services.import_service(
                session,
                caller.organization_id,
                content=content,
                filename=filename,
                options=options,
                fetcher=plane.fetcher,
                yaml_limits=plane.yaml_limits,
                schema_limits=plane.schema_limits,
                may_move_secrets=caller.may(tokens.ADMIN),
            ),
        )
    else:
        try:
            by_url = ImportByUrl.model_validate_json(await request.body())
        except ValidationError as exc:  # a problem detail naming the field, not a 500
            raise RequestValidationError(exc.errors(include_url=False)) from exc

        if by_url.secret_id is not None:  # the URL is the caller's choice: only an admin sends a secret there
            tokens.require_admin(caller, "reading a description with a secret")

        def import_by_url() -> services.Imported:
            options = by_url.options()
            if by_url.secret_id is not None:
                with plane.session() as own:  # not the request's session: it must hold no connection while fetching
                    headers = secrets.import_headers(own, plane.keys, caller.organization_id, by_url.secret_id)
                options = replace(options, headers=headers)
            return services.import_service(
                session,
                caller.organization_id,
                url=by_url.url,
                options=options,
                fetcher=plane.fetcher,
                yaml_limits=plane.yaml_limits,
                schema_limits=plane.schema_limits,
                may_move_secrets=caller.may(tokens.ADMIN),
            )

        imported = await in_import_pool(plane, import_by_url)
    return ImportedService.model_validate(
        {
            **ServiceView.model_validate(imported.service).model_dump(),
            "created": imported.created,
            "warnings": [str(warning) for warning in imported.catalog.warnings],
            "held": [asdict(change) for change in imported.held],
        }
    )


_FORM_FIELDS = ("name", "version", "kind", "grpc_service", "graphql_depth")


ServiceKind = Literal["openapi", "graphql", "grpc", "mcp"]


@router.get("/services", response_model=list[ServiceView])
def list_services(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    kind: Annotated[ServiceKind | None, Query(description="only the services of this kind")] = None,
) -> list[ServiceView]:
    """The organization's services by name and version; `q` searches name, version, kind and description."""
    found = (s for s in services.listed(session, caller.organization_id) if kind is None or s.kind == kind)
    listed = page.of(found, response, lambda s: (s.name, s.version, s.kind, s.description))
    return [ServiceView.model_validate(s) for s in listed]


def _operations(service: Service) -> list[Operation]:
    return list(decode_service(service.compiled).operations)


def _operation_view(op: Operation) -> OperationView:
    return OperationView(
        tool_name=op.tool_name, signature=op.signature, operation_id=op.operation_id, title=op.title, tags=list(op.tags)
    )


def _operation_text(op: Operation) -> tuple[object, ...]:
    return (op.tool_name, op.signature, op.operation_id, op.title, op.tags, op.description)


@router.get("/services/{service_id}", response_model=ServiceDetail)
def get_service(
    service_id: str,
    caller: UserCaller,
    session: DbSession,
    operations: Annotated[
        bool, Query(description="false: `operations` is left empty (`/services/{id}/operations` pages them)")
    ] = True,
) -> ServiceDetail:
    """A service with all its operations (`/services/{id}/operations` searches and pages them)."""
    service = get_owned(session, Service, caller.organization_id, service_id, "service")
    listed = [_operation_view(op) for op in _operations(service)] if operations else []
    health = [
        UpstreamHealthView.model_validate({"gateway": gateway.name, "state": state, "last_seen": gateway.last_seen})
        for gateway, state in gateways.upstream_health(session, caller.organization_id, service.id)
    ]
    return view(ServiceDetail, service, operations=listed, upstream_health=health)


@router.get("/services/{service_id}/changes", response_model=HeldChanges)
def held_changes(service_id: str, caller: UserCaller, session: DbSession) -> HeldChanges:
    """What an MCP server changed in its tools since it was imported, held (not served) until an admin accepts it:
    each tool added, changed or removed, with a diff and what its new text holds that is aimed at the model."""
    service, found = upstream_changes.held(session, caller.organization_id, service_id)
    return HeldChanges(service_id=service.id, changes=[DefinitionChangeView.model_validate(c) for c in found])


@router.post("/services/{service_id}/changes/accept", response_model=ServiceView)
def accept_changes(service_id: str, caller: UserCaller, session: DbSession) -> ServiceView:
    """Serve the MCP server's tools as it lists them now (admin): gateways resync."""
    tokens.require_admin(caller, "accepting what an MCP server changed")
    return ServiceView.model_validate(upstream_changes.accept(session, caller.organization_id, service_id))


@router.delete("/services/{service_id}/changes", response_model=ServiceView)
def reject_changes(service_id: str, caller: UserCaller, session: DbSession) -> ServiceView:
    """Keep serving the tools as they were (admin): the held changes are dropped."""
    tokens.require_admin(caller, "rejecting what an MCP server changed")
    return ServiceView.model_validate(upstream_changes.reject(session, caller.organization_id, service_id))


@router.delete("/services/{service_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_service(service_id: str, caller: UserCaller, session: DbSession) -> None:
    services.delete(session, caller.organization_id, service_id)


@router.get("/services/{service_id}/operations", response_model=list[OperationView])
def list_operations(
    service_id: str,
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    tag: Annotated[str | None, Query(max_length=200, description="only the operations with this tag")] = None,
    method: Annotated[
        str | None,
        Query(
            pattern=r"^[A-Za-z]{1,20}$",
            description="only the operations whose signature starts with it: GET, POST... (REST), query or "
            "mutation (GraphQL), tool (MCP); case-insensitive",
        ),
    ] = None,
) -> list[OperationView]:
    """A service's operations in the description's order; `q` searches the tool name, the signature (`GET /pets`),
    the operationId, the title, the tags and the description."""
    service = get_owned(session, Service, caller.organization_id, service_id, "service")
    wanted_tag = tag.casefold() if tag is not None else None
    wanted_method = method.casefold() if method is not None else None
    found = (
        op
        for op in _operations(service)
        if (wanted_tag is None or any(t.casefold() == wanted_tag for t in op.tags))
        and (wanted_method is None or op.signature.split(" ", 1)[0].casefold() == wanted_method)
    )
    return [_operation_view(op) for op in page.of(found, response, _operation_text)]


@router.get("/services/{service_id}/artifacts", response_model=list[ArtifactView])
def list_artifacts(
    service_id: str, caller: UserCaller, session: DbSession, page: ListPage, response: Response
) -> list[ArtifactView]:
    """A service's files: its description and the artifacts attached; `q` searches name, role, kind and source."""
    found = services.artifacts(session, caller.organization_id, service_id)
    listed = page.of(found, response, lambda a: (a.name, a.role, a.kind, a.source))
    return [ArtifactView.model_validate(a) for a in listed]


@router.post(
    "/services/{service_id}/artifacts",
    response_model=ArtifactView,
    status_code=status.HTTP_201_CREATED,
    openapi_extra={"requestBody": _ARTIFACT_UPLOAD},
)
async def attach_artifact(
    service_id: str, request: Request, caller: UserCaller, session: DbSession, plane: Plane
) -> ArtifactView:
    """Attach an artifact to a service (multipart: `file`, optional `name`); a same-named one is replaced in place.

    The file is a Prompts, Resources, CustomTools or ToolsOutputFilters document (reShapr's format; schemas at
    `/artifact-schemas/{kind}`), for this service, naming only tools it has: otherwise 422 with the JSON pointer
    of the fault in `detail`, and nothing is stored.

    The form is read by hand, after the token is checked: a parameter declared as a form field would have
    FastAPI parse (and spool) the upload before any dependency runs."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise Invalid("send the artifact as multipart/form-data with a `file` part", field="file")
    async with request.form() as form:
        upload = form.get("file")
        if not isinstance(upload, FormFile):
            raise Invalid("the form needs a `file` part", field="file")
        content = await upload.read()
        if len(content) > plane.fetcher.limits.max_bytes:  # as a description's (APIMCP_FETCH_MAX_BYTES)
            raise Invalid(f"the file is larger than the {plane.fetcher.limits.max_bytes} bytes allowed", field="file")
        given = form.get("name")
        named = (given if isinstance(given, str) and given else None) or upload.filename or "artifact"
    artifact = await in_import_pool(
        plane,
        lambda: services.attach(
            session, caller.organization_id, service_id, named, content, yaml_limits=plane.yaml_limits
        ),
    )
    return ArtifactView.model_validate(artifact)


@router.post(
    "/services/{service_id}/artifacts/from-url", response_model=ArtifactView, status_code=status.HTTP_201_CREATED
)
async def attach_artifact_from_url(
    service_id: str, body: ArtifactByUrl, caller: UserCaller, session: DbSession, plane: Plane
) -> ArtifactView:
    """Attach an artifact read from an http(s) URL (same rules as importing a description by URL)."""

    def attach_by_url() -> Artifact:
        with plane.session() as own:  # not the request's session: it must hold no connection while fetching
            get_owned(own, Service, caller.organization_id, service_id, "service")  # before fetching anything
        content, default_name = services.read_artifact(body.url, plane.fetcher)
        return services.attach(
            session,
            caller.organization_id,
            service_id,
            body.name or default_name,
            content,
            source=body.url,
            yaml_limits=plane.yaml_limits,
        )

    return ArtifactView.model_validate(await in_import_pool(plane, attach_by_url))


@router.delete("/artifacts/{artifact_id}", response_model=ArtifactDeletionView)
def delete_artifact(artifact_id: str, caller: UserCaller, session: DbSession) -> ArtifactDeletionView:
    """Detach an artifact. The plans that selected it by name no longer do; one that selected nothing else
    falls back to all the service's artifacts (an empty selection means all), which the answer says."""
    return ArtifactDeletionView.model_validate(services.delete_artifact(session, caller.organization_id, artifact_id))


@router.get(
    "/artifact-schemas/{kind}",
    response_class=Response,
    responses={200: {"content": {"application/schema+json": {}}, "description": "the kind's JSON Schema"}},
)
def artifact_schema(kind: str, caller: UserCaller) -> Response:
    """The JSON Schema (2020-12) artifact files of `kind` are validated with: Prompts, Resources, CustomTools or
    ToolsOutputFilters (editors can check files with it)."""
    if kind not in ARTIFACT_KINDS:
        raise NotFound(f"no artifact kind {kind!r}; the kinds are {', '.join(ARTIFACT_KINDS)}")
    return Response(schema_text(kind), media_type="application/schema+json")
