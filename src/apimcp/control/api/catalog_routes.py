"""Services and their artifacts."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile as FormFile

from apimcp.catalog.codec import decode_service
from apimcp.control.api.auth import DbSession, Plane, UserCaller
from apimcp.control.api.views import (
    ArtifactByUrl,
    ArtifactView,
    ImportByUrl,
    ImportedService,
    ImportOptionsForm,
    OperationView,
    ServiceDetail,
    ServiceView,
    view,
)
from apimcp.control.domain import secrets, services
from apimcp.control.domain.common import get_owned
from apimcp.control.errors import Invalid
from apimcp.control.models import Service

router = APIRouter(tags=["services"])


@router.post("/services", response_model=ImportedService, status_code=status.HTTP_201_CREATED)
async def import_service(request: Request, caller: UserCaller, session: DbSession, plane: Plane) -> ImportedService:
    """Import an API description: multipart (`file`, optional `name`, `version`, `kind`, `grpc_service`,
    `graphql_depth`) or JSON `{url, ...the same, introspect}`.

    The kind (openapi, graphql or grpc) is detected when not given: OpenAPI 2/3 in JSON or YAML,
    GraphQL SDL or introspection JSON, a .proto file or a binary FileDescriptorSet; a grpc:// or
    grpcs:// URL asks the server by reflection, and `introspect` asks a live GraphQL endpoint.
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
        # parsing (and fetching, below) blocks: off the event loop, so other requests go on meanwhile
        imported = await run_in_threadpool(
            services.import_service,
            session,
            caller.organization_id,
            content=content,
            filename=filename,
            options=body.options(),
        )
    else:
        try:
            body = ImportByUrl.model_validate_json(await request.body())
        except ValidationError as exc:  # a problem detail naming the field, not a 500
            raise RequestValidationError(exc.errors(include_url=False)) from exc
        options = body.options()
        if body.secret_id is not None:
            headers = secrets.import_headers(session, plane.keys, caller.organization_id, body.secret_id)
            options = replace(options, headers=headers)
        imported = await run_in_threadpool(
            services.import_service, session, caller.organization_id, url=body.url, options=options
        )
    return ImportedService.model_validate(
        {
            **ServiceView.model_validate(imported.service).model_dump(),
            "created": imported.created,
            "warnings": [str(warning) for warning in imported.catalog.warnings],
        }
    )


_FORM_FIELDS = ("name", "version", "kind", "grpc_service", "graphql_depth")


@router.get("/services", response_model=list[ServiceView])
def list_services(caller: UserCaller, session: DbSession) -> list[ServiceView]:
    return [ServiceView.model_validate(s) for s in services.listed(session, caller.organization_id)]


@router.get("/services/{service_id}", response_model=ServiceDetail)
def get_service(service_id: str, caller: UserCaller, session: DbSession) -> ServiceDetail:
    service = get_owned(session, Service, caller.organization_id, service_id, "service")
    operations = [
        OperationView(
            tool_name=op.tool_name,
            signature=op.signature,
            operation_id=op.operation_id,
            title=op.title,
            tags=list(op.tags),
        )
        for op in decode_service(service.compiled).operations
    ]
    return view(ServiceDetail, service, operations=operations)


@router.delete("/services/{service_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_service(service_id: str, caller: UserCaller, session: DbSession) -> None:
    services.delete(session, caller.organization_id, service_id)


@router.get("/services/{service_id}/artifacts", response_model=list[ArtifactView])
def list_artifacts(service_id: str, caller: UserCaller, session: DbSession) -> list[ArtifactView]:
    return [ArtifactView.model_validate(a) for a in services.artifacts(session, caller.organization_id, service_id)]


@router.post("/services/{service_id}/artifacts", response_model=ArtifactView, status_code=status.HTTP_201_CREATED)
async def attach_artifact(
    service_id: str,
    caller: UserCaller,
    session: DbSession,
    file: Annotated[UploadFile, File(description="a YAML or JSON artifact")],
    name: Annotated[str | None, Form()] = None,
) -> ArtifactView:
    """Attach an artifact to a service (a same-named one is replaced)."""
    content = await file.read()
    artifact = services.attach(
        session, caller.organization_id, service_id, name or file.filename or "artifact", content
    )
    return ArtifactView.model_validate(artifact)


@router.post(
    "/services/{service_id}/artifacts/from-url", response_model=ArtifactView, status_code=status.HTTP_201_CREATED
)
def attach_artifact_from_url(
    service_id: str, body: ArtifactByUrl, caller: UserCaller, session: DbSession
) -> ArtifactView:
    """Attach an artifact read from an http(s) URL (same rules as importing a description by URL)."""
    artifact = services.attach_from_url(session, caller.organization_id, service_id, body.url, body.name)
    return ArtifactView.model_validate(artifact)


@router.delete("/artifacts/{artifact_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_artifact(artifact_id: str, caller: UserCaller, session: DbSession) -> None:
    services.delete_artifact(session, caller.organization_id, artifact_id)
