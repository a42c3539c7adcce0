"""Small builders the control-plane tests share: organizations, OpenAPI documents, raw table dumps."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.domain import orgs, services
from apimcp.control.models import Base
from apimcp.control.plane import ControlPlane

ECHO_SPEC = Path(__file__).resolve().parents[1] / "gateway" / "echo_api.yaml"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def echo_content() -> bytes:
    return ECHO_SPEC.read_bytes()


def spec(
    title: str = "Pets",
    version: str = "1.0",
    operations: Sequence[str] = ("listPets",),
    server: str | None = "https://pets.example/v1",
) -> bytes:
    """A minimal OpenAPI 3.0 document: one GET operation per operationId, on `/<operationId>`."""
    paths = {
        f"/{operation.lower()}": {"get": {"operationId": operation, "responses": {"200": {"description": "ok"}}}}
        for operation in operations
    }
    document: dict[str, Any] = {"openapi": "3.0.3", "info": {"title": title, "version": version}, "paths": paths}
    if server is not None:
        document["servers"] = [{"url": server}]
    return orjson.dumps(document)


def prompts(service: str = "Echo API", version: str = "2.1", *names: str, result: str = "Be brief.") -> bytes:
    """A valid Prompts artifact for `service` (reShapr's format), declaring a prompt per name ("hello" if none)."""
    document = {
        "apiVersion": "reshapr.io/v1alpha1",
        "kind": "Prompts",
        "service": {"name": service, "version": version},
        "prompts": {name: {"result": result} for name in names or ("hello",)},
    }
    return orjson.dumps(document)


def new_org(plane: ControlPlane, name: str) -> str:
    with plane.session() as session:
        return orgs.create(session, name).id


def import_echo(plane: ControlPlane, organization_id: str) -> services.Imported:
    with plane.session() as session:
        return services.import_service(session, organization_id, content=echo_content(), filename="echo_api.yaml")


def import_spec(
    plane: ControlPlane, organization_id: str, content: bytes, filename: str = "spec.json"
) -> services.Imported:
    with plane.session() as session:
        return services.import_service(session, organization_id, content=content, filename=filename)


def dump_all_rows(session: Session) -> str:
    """Every value of every row of every table, as one text (bytes decoded leniently)."""
    parts: list[str] = []
    for table in Base.metadata.sorted_tables:
        for row in session.execute(select(table)):
            for value in row:
                if isinstance(value, bytes | memoryview):
                    parts.append(bytes(value).decode("utf-8", "replace"))
                else:
                    parts.append(str(value))
    return "\n".join(parts)


def approval_call(exposition: str, **changes: Any) -> dict[str, Any]:
    """What a gateway submits of a call waiting for an administrator (`POST /gateway/approvals`), with `changes`."""
    call = {
        "exposition": exposition,
        "tool": "delete_book",
        "digest": "a" * 64,
        "caller": "https://login.example.com ann",
        "question": "Approve delete_book with bookId=3?",
        "lifetime": 300.0,
    }
    return {**call, **changes}
