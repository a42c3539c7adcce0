"""The history of an organization's objects: who changed what and when, each object's versions, what differs between
two of them, and rolling a plan or an exposition back to one (`control.domain.history`)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.api.views import Timestamp, View
from apimcp.control.domain import history
from apimcp.control.models import Version

MAX_VERSION: Final = 2**31 - 1
"""The highest version number a request may name: what the store's integer column holds (a larger one was a 500)."""
VersionNumber = Annotated[int, Path(ge=1, le=MAX_VERSION, description="a version's number (1 for the first)")]

router = APIRouter(tags=["history"])


class Actor(BaseModel):
    token_id: str
    name: str | None = Field(description="the token's name when it made the change")
    role: str | None


class VersionView(View):
    kind: str
    object_id: str
    number: int = Field(description="1 for the object's first version, then one more for each change")
    object_name: str | None
    action: str = Field(description="created, updated, deleted or rolled back")
    restored_from: int | None = Field(default=None, description="for a rollback: the version applied again")
    actor: Actor | None = Field(description="the API token that made the change; null: the control plane itself")
    at: Timestamp


class VersionDetail(VersionView):
    state: dict[str, Any] = Field(description="the object after the change (never a secret's values)")


class VersionPage(BaseModel):
    total: int
    limit: int
    offset: int
    items: list[VersionView]


class Difference(BaseModel):
    path: str = Field(description="dotted path of the field that differs")
    before: Any
    after: Any


class VersionDiff(BaseModel):
    kind: str
    object_id: str
    from_version: int = Field(alias="from")
    to_version: int = Field(alias="to")
    changes: list[Difference]

    model_config = {"populate_by_name": True}


class RestoreResult(BaseModel):
    version: VersionView = Field(description="the new version, a rollback")
    changes: list[Difference] = Field(description="what the rollback changed")
    api_key: str | None = Field(default=None, description="a plan's new inbound API key: shown this once")


def _view(version: Version, model: type[VersionView] = VersionView) -> Any:
    actor = None
    if version.actor_token_id is not None:
        actor = Actor(token_id=version.actor_token_id, name=version.actor_name, role=version.actor_role)
    fields = {name: getattr(version, name) for name in model.model_fields if name != "actor"}
    return model.model_validate({**fields, "actor": actor})


Limit = Query(default=50, ge=1, le=history.MAX_LISTED)
Offset = Query(default=0, ge=0, le=1_000_000)


@router.get("/history", response_model=VersionPage, response_model_by_alias=True)
def organization_history(
    caller: UserCaller,
    session: DbSession,
    kind: str | None = Query(default=None, description=f"one of {', '.join(history.KINDS)}"),
    object_id: str | None = Query(default=None, max_length=64),
    limit: int = Limit,
    offset: int = Offset,
) -> VersionPage:
    """Every recorded change of the organization's services, artifacts, plans, expositions, secrets (their metadata)
    and policies, newest first: who (the API token), when, what (the action, the object)."""
    page = history.listed(session, caller.organization_id, kind, object_id, limit, offset)
    return VersionPage(total=page.total, limit=limit, offset=offset, items=[_view(v) for v in page.items])


def _routes(collection: str, kind: str) -> None:
    """Versions, diff (and, for plans and expositions, restore) under /{collection}/{id}."""

    def versions(
        object_id: str, caller: UserCaller, session: DbSession, limit: int = Limit, offset: int = Offset
    ) -> VersionPage:
        page = history.listed(session, caller.organization_id, kind, object_id, limit, offset)
        if page.total == 0:
            history.version(session, caller.organization_id, kind, object_id, 1)  # 404 naming it
        return VersionPage(total=page.total, limit=limit, offset=offset, items=[_view(v) for v in page.items])

    def one(object_id: str, number: VersionNumber, caller: UserCaller, session: DbSession) -> VersionDetail:
        found = history.version(session, caller.organization_id, kind, object_id, number)
        detail: VersionDetail = _view(found, VersionDetail)
        return detail

    def difference(
        object_id: str,
        caller: UserCaller,
        session: DbSession,
        from_version: int = Query(alias="from", ge=1, le=MAX_VERSION),
        to_version: int = Query(alias="to", ge=1, le=MAX_VERSION),
    ) -> VersionDiff:
        before = history.version(session, caller.organization_id, kind, object_id, from_version)
        after = history.version(session, caller.organization_id, kind, object_id, to_version)
        changes = [Difference(**c) for c in history.diff(before.state, after.state)]
        return VersionDiff.model_validate(
            {"kind": kind, "object_id": object_id, "from": from_version, "to": to_version, "changes": changes}
        )

    base = f"/{collection}/{{object_id}}"
    tags: list[str | Enum] = ["history"]
    router.add_api_route(
        f"{base}/versions",
        versions,
        methods=["GET"],
        response_model=VersionPage,
        tags=tags,
        summary=f"Versions of a {kind}",
        description=f"The {kind}'s versions, newest first.",
    )
    router.add_api_route(
        f"{base}/versions/{{number}}",
        one,
        methods=["GET"],
        response_model=VersionDetail,
        tags=tags,
        summary=f"One version of a {kind}",
        description=f"The {kind}'s state after that change.",
    )
    router.add_api_route(
        f"{base}/diff",
        difference,
        methods=["GET"],
        response_model=VersionDiff,
        tags=tags,
        summary=f"What differs between two versions of a {kind}",
        description="One entry per field that differs: {path, before, after}.",
    )
    if kind not in history.RESTORABLE:
        return

    def restore(object_id: str, number: VersionNumber, caller: UserCaller, session: DbSession) -> RestoreResult:
        restored = history.restore(session, caller, kind, object_id, number)
        return RestoreResult(
            version=_view(restored.version),
            changes=[Difference(**c) for c in restored.changes],
            api_key=restored.api_key,
        )

    router.add_api_route(
        f"{base}/versions/{{number}}/restore",
        restore,
        methods=["POST"],
        response_model=RestoreResult,
        tags=tags,
        summary=f"Roll a {kind} back to a version",
        description=f"Apply the version's state as an update of the {kind} would (the same checks; gateways receive "
        'it as any change), recorded as a new version "rolled back". A version naming a plan, group or secret '
        "deleted since is refused with 409.",
    )


for _collection, _kind in (
    ("services", "service"),
    ("artifacts", "artifact"),
    ("plans", "plan"),
    ("expositions", "exposition"),
    ("secrets", "secret"),
    ("templates", "template"),
):
    _routes(_collection, _kind)
