"""Plan templates: named presets of plan settings that a new plan starts with (`POST /plans` with `template`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response, status

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import PlanSettings, TemplateInput, TemplateUpdate, TemplateView
from apimcp.control.domain import plans, templates

router = APIRouter(tags=["templates"])


def settings_of(settings: PlanSettings) -> dict[str, Any]:
    """The settings a request gave, as the domain takes them."""
    values = settings.model_dump(exclude_unset=True)
    if values.get("cache") is not None:
        values["cache"] = {method: dict(hint) for method, hint in values["cache"].items()}
    return values


@router.post("/templates", response_model=TemplateView, status_code=status.HTTP_201_CREATED)
def create_template(body: TemplateInput, caller: UserCaller, session: DbSession) -> TemplateView:
    """A template: its settings are checked as a plan's (an introspection secret in them: an admin)."""
    settings = settings_of(body.settings)
    plans.check_secret_use(caller, settings)
    template = templates.create(session, caller.organization_id, body.name, settings, body.description)
    return TemplateView.model_validate(template)


@router.get("/templates", response_model=list[TemplateView])
def list_templates(caller: UserCaller, session: DbSession, page: ListPage, response: Response) -> list[TemplateView]:
    """The organization's templates by name; `q` searches name and description."""
    found = templates.listed(session, caller.organization_id)
    return [TemplateView.model_validate(t) for t in page.of(found, response, lambda t: (t.name, t.description))]


@router.get("/templates/{template_id}", response_model=TemplateView)
def get_template(template_id: str, caller: UserCaller, session: DbSession) -> TemplateView:
    """A template, by id or name."""
    return TemplateView.model_validate(templates.find(session, caller.organization_id, template_id))


@router.patch("/templates/{template_id}", response_model=TemplateView)
def update_template(template_id: str, body: TemplateUpdate, caller: UserCaller, session: DbSession) -> TemplateView:
    """Rename a template, or replace its description or its settings (all of them); plans made from it stay as
    they are."""
    values: dict[str, Any] = body.model_dump(exclude_unset=True, exclude={"settings"})
    if body.settings is not None:
        values["settings"] = settings_of(body.settings)
        plans.check_secret_use(caller, values["settings"])
    template = templates.update(session, caller.organization_id, template_id, values)
    return TemplateView.model_validate(template)


@router.delete("/templates/{template_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_template(template_id: str, caller: UserCaller, session: DbSession) -> None:
    """Delete a template; plans made from it stay as they are."""
    templates.delete(session, caller.organization_id, template_id)
