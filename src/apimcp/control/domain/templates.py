"""Plan templates: an organization's named presets of plan settings (inbound security with its OAuth settings and
introspection secret, rate limits, header policy, audit, tasks, tool search, code mode, policies, guardrails,
resilience, cache hints, backend timeout, output schemas: `plans.SETTINGS`), checked exactly as a plan's fields are.

A plan made from a template (`POST /plans` with `template`) gets a copy of its settings, the request's own fields
winning; the plan does not follow the template afterwards, and deleting a template changes no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from apimcp.control.domain import plans
from apimcp.control.domain.common import check_name
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import PlanTemplate

_INBOUND_DETAILS = ("oauth", "introspection_secret_id")
MAX_DESCRIPTION = 2000


def _check_free(session: Session, organization_id: str, name: str, template_id: str | None = None) -> None:
    check_name(name)
    taken = session.scalar(
        select(PlanTemplate).where(PlanTemplate.organization_id == organization_id, PlanTemplate.name == name)
    )
    if taken is not None and taken.id != template_id:
        raise Conflict(f"template {name!r} already exists", field="name")


def _description(description: str | None) -> str | None:
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise Invalid(f"a description has at most {MAX_DESCRIPTION} characters", field="description")
    return description or None


def find(session: Session, organization_id: str, reference: str, field: str | None = None) -> PlanTemplate:
    """The organization's template with this id, else with this name; NotFound otherwise."""
    found = session.get(PlanTemplate, reference)
    if found is None or found.organization_id != organization_id:
        found = session.scalar(
            select(PlanTemplate).where(PlanTemplate.organization_id == organization_id, PlanTemplate.name == reference)
        )
    if found is None:
        raise NotFound(f"no template {reference!r}", field=field)
    return found


def create(
    session: Session, organization_id: str, name: str, settings: Mapping[str, Any], description: str | None = None
) -> PlanTemplate:
    _check_free(session, organization_id, name)
    template = PlanTemplate(
        organization_id=organization_id,
        name=name,
        description=_description(description),
        settings=_checked(session, organization_id, settings),
    )
    session.add(template)
    session.flush()
    return template


def update(session: Session, organization_id: str, reference: str, values: Mapping[str, Any]) -> PlanTemplate:
    """Change a template's name, description or settings (`settings` replaces them all); no plan changes."""
    template = find(session, organization_id, reference)
    if values.get("name") is not None:
        _check_free(session, organization_id, str(values["name"]), template.id)
        template.name = str(values["name"])
    if "description" in values:
        template.description = _description(values["description"])
    if "settings" in values:
        template.settings = _checked(session, organization_id, values["settings"] or {})
    session.flush()
    return template


def delete(session: Session, organization_id: str, reference: str) -> None:
    session.delete(find(session, organization_id, reference))


def listed(session: Session, organization_id: str) -> list[PlanTemplate]:
    return list(
        session.scalars(
            select(PlanTemplate).where(PlanTemplate.organization_id == organization_id).order_by(PlanTemplate.name)
        )
    )


def _checked(session: Session, organization_id: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return plans.checked_settings(session, organization_id, settings)
    except Invalid as exc:  # the field is one of the settings
        raise Invalid(exc.detail, field=f"settings.{exc.field}" if exc.field else "settings") from None


def merged(session: Session, organization_id: str, reference: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """A plan's fields made from template `reference` and the request's own `values`, which win. Inbound security
    goes as a whole: a request naming an `inbound_mode` other than oauth takes none of the template's OAuth
    settings or introspection secret."""
    settings = dict(find(session, organization_id, reference, field="template").settings)
    mode = values.get("inbound_mode")
    if mode is not None and mode != "oauth":
        for field in _INBOUND_DETAILS:
            settings.pop(field, None)
    return {**settings, **values}
