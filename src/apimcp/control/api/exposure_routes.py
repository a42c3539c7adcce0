"""Plans, gateway groups, expositions and gateways."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status

from apimcp.control.api.auth import DbSession, UserCaller
from apimcp.control.api.paging import ListPage
from apimcp.control.api.views import (
    DuplicateInput,
    ExpositionDuplicate,
    ExpositionInput,
    ExpositionUpdate,
    ExpositionView,
    GatewayView,
    GroupInput,
    GroupUpdate,
    GroupView,
    PlanFields,
    PlanInput,
    PlanPreviewInput,
    PlanResult,
    PlanView,
    PolicyTestInput,
    view,
)
from apimcp.control.domain import expositions, gateways, groups, plan_preview, plans, policy_checks, templates
from apimcp.control.domain.common import get_owned
from apimcp.control.models import Exposition, GatewayGroup, Plan, Service

router = APIRouter()


def plan_view(plan: Plan, api_key: str | None = None) -> PlanResult:
    inbound = plan.inbound
    return view(
        PlanResult,
        plan,
        inbound_mode=inbound.get("mode", "none"),
        oauth=inbound.get("oauth"),
        introspection_secret_id=inbound.get("introspection_secret_id"),
        api_key=api_key,
    )


def _plan_values(fields: PlanFields) -> dict[str, Any]:
    values = fields.model_dump(exclude_unset=True, exclude={"name", "service_id", "template"})
    if "cache" in values and values["cache"] is not None:
        values["cache"] = {m: dict(h) for m, h in values["cache"].items()}
    return values


@router.post("/plans", response_model=PlanResult, status_code=status.HTTP_201_CREATED, tags=["plans"])
def create_plan(body: PlanInput, caller: UserCaller, session: DbSession) -> PlanResult:
    """Create a plan; with `template` (id or name), the template's settings are copied into it, the request's own
    fields winning (a request naming an inbound_mode other than oauth takes none of its OAuth settings)."""
    values = _plan_values(body)
    if body.template is not None:
        values = templates.merged(session, caller.organization_id, body.template, values)
    plans.check_secret_use(caller, values)
    plans.check_trust(caller, values)
    plan, key = plans.create(session, caller.organization_id, body.service_id, body.name, values)
    return plan_view(plan, key)


@router.post("/plans/preview", response_model=dict[str, Any], tags=["plans"])
def preview_plan(body: PlanPreviewInput, caller: UserCaller, session: DbSession) -> dict[str, Any]:
    """The tools a plan of `service_id` with these include/exclude patterns and tool prefix would serve: every
    operation with its tool name, whether it is served and, when not, why (`not included`, `excluded by P`),
    and the patterns that select nothing (saving them is refused). Nothing is saved."""
    return plan_preview.preview(
        session, caller.organization_id, body.service_id, body.include, body.exclude, body.tool_prefix
    )


@router.get("/plans", response_model=list[PlanView], tags=["plans"])
def list_plans(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    service_id: Annotated[str | None, Query(description="only the plans of this service")] = None,
) -> list[PlanResult]:
    """The organization's plans; `q` searches name, description, tool prefix and backend URL, and the name and
    version of the plan's service."""

    def text(plan: Plan) -> tuple[object, ...]:
        service = session.get(Service, plan.service_id)
        named = (service.name, service.version) if service is not None else ()
        return (plan.name, plan.description, plan.tool_prefix, plan.backend_endpoint, *named)

    listed = page.of(plans.listed(session, caller.organization_id, service_id), response, text)
    return [plan_view(p) for p in listed]


@router.get("/plans/{plan_id}", response_model=PlanView, tags=["plans"])
def get_plan(plan_id: str, caller: UserCaller, session: DbSession) -> PlanResult:
    return plan_view(get_owned(session, Plan, caller.organization_id, plan_id, "plan"))


@router.patch("/plans/{plan_id}", response_model=PlanResult, tags=["plans"])
def update_plan(plan_id: str, body: PlanFields, caller: UserCaller, session: DbSession) -> PlanResult:
    values = _plan_values(body)
    plans.check_secret_use(caller, values, get_owned(session, Plan, caller.organization_id, plan_id, "plan"))
    plans.check_trust(caller, values)
    plan, key = plans.update(session, caller.organization_id, plan_id, values)
    return plan_view(plan, key)


@router.post("/plans/{plan_id}/policy-test", response_model=dict[str, Any], tags=["plans"])
def test_policies(plan_id: str, body: PolicyTestInput, caller: UserCaller, session: DbSession) -> dict[str, Any]:
    """What the plan's policies (the organization's first) would do with a call of `tool` with `arguments` by a
    token carrying `claims` (none: anonymous), from `client`: allow or deny, the rule that decided, the fields
    redacted, conditions that could not be evaluated, and whether the caller sees the tool listed. Nothing is
    called."""
    return policy_checks.check_call(
        session, caller.organization_id, plan_id, body.tool, body.arguments, body.claims, body.client, body.revision
    )


@router.post("/plans/{plan_id}/api-key", response_model=PlanResult, tags=["plans"])
def renew_plan_api_key(plan_id: str, caller: UserCaller, session: DbSession) -> PlanResult:
    values = {"inbound_mode": "api_key"}
    plans.check_secret_use(caller, values, get_owned(session, Plan, caller.organization_id, plan_id, "plan"))
    plans.check_trust(caller, values)
    plan, key = plans.update(session, caller.organization_id, plan_id, values)
    return plan_view(plan, key)


@router.post("/plans/{plan_id}/duplicate", response_model=PlanResult, status_code=201, tags=["plans"])
def duplicate_plan(plan_id: str, body: DuplicateInput, caller: UserCaller, session: DbSession) -> PlanResult:
    plans.check_duplication(caller, get_owned(session, Plan, caller.organization_id, plan_id, "plan"))
    plan, key = plans.duplicate(session, caller.organization_id, plan_id, body.name)
    return plan_view(plan, key)


@router.delete("/plans/{plan_id}", status_code=status.HTTP_204_NO_CONTENT, tags=["plans"])
def delete_plan(plan_id: str, caller: UserCaller, session: DbSession) -> None:
    plans.delete(session, caller.organization_id, plan_id)


@router.post("/gateway-groups", response_model=GroupView, status_code=201, tags=["gateways"])
def create_group(body: GroupInput, caller: UserCaller, session: DbSession) -> GroupView:
    return GroupView.model_validate(groups.create(session, caller.organization_id, body.name, body.labels))


@router.get("/gateway-groups", response_model=list[GroupView], tags=["gateways"])
def list_groups(caller: UserCaller, session: DbSession, page: ListPage, response: Response) -> list[GroupView]:
    """The organization's gateway groups; `q` searches name and labels (`zone=eu`)."""
    listed = page.of(groups.listed(session, caller.organization_id), response, lambda g: (g.name, g.labels))
    return [GroupView.model_validate(g) for g in listed]


@router.get("/gateway-groups/{group_id}", response_model=GroupView, tags=["gateways"])
def get_group(group_id: str, caller: UserCaller, session: DbSession) -> GroupView:
    return GroupView.model_validate(get_owned(session, GatewayGroup, caller.organization_id, group_id, "gateway group"))


@router.patch("/gateway-groups/{group_id}", response_model=GroupView, tags=["gateways"])
def update_group(group_id: str, body: GroupUpdate, caller: UserCaller, session: DbSession) -> GroupView:
    return GroupView.model_validate(groups.update(session, caller.organization_id, group_id, body.labels))


@router.delete("/gateway-groups/{group_id}", status_code=204, tags=["gateways"])
def delete_group(group_id: str, caller: UserCaller, session: DbSession) -> None:
    groups.delete(session, caller.organization_id, group_id)


@router.get("/gateways", response_model=list[GatewayView], tags=["gateways"])
def list_gateways(caller: UserCaller, session: DbSession, page: ListPage, response: Response) -> list[GatewayView]:
    """The gateways that registered, by name; `q` searches name, labels, version and host names."""
    found = gateways.listed(session, caller.organization_id)
    listed = page.of(found, response, lambda g: (g.name, g.labels, g.version, g.fqdns))
    return [GatewayView.model_validate(g) for g in listed]


def exposition_view(session: DbSession, exposition: Exposition, organization: str) -> ExpositionView:
    plan = session.get(Plan, exposition.plan_id)
    service = session.get(Service, plan.service_id) if plan is not None else None
    endpoints = [f"/mcp/{exposition.id}"]
    if exposition.name is not None:
        endpoints.insert(0, f"/mcp/{organization}/{exposition.name}")
    if service is not None:
        endpoints.append(f"/mcp/{organization}/{service.name.replace(' ', '+')}/{service.version}")
    return ExpositionView.model_validate(
        {**ExpositionView.model_validate(exposition).model_dump(), "endpoints": endpoints}
    )


@router.post("/expositions", response_model=ExpositionView, status_code=201, tags=["expositions"])
def create_exposition(body: ExpositionInput, caller: UserCaller, session: DbSession) -> ExpositionView:
    exposition = expositions.create(session, caller.organization_id, body.plan_id, body.group_id, body.name)
    return exposition_view(session, exposition, caller.organization)


@router.get("/expositions", response_model=list[ExpositionView], tags=["expositions"])
def list_expositions(
    caller: UserCaller,
    session: DbSession,
    page: ListPage,
    response: Response,
    plan_id: Annotated[str | None, Query(description="only the expositions of this plan")] = None,
    group_id: Annotated[str | None, Query(description="only the expositions on this gateway group")] = None,
) -> list[ExpositionView]:
    """The organization's expositions; `q` searches name and id, the plan's name and the service's name and
    version."""

    def text(exposition: Exposition) -> tuple[object, ...]:
        plan = session.get(Plan, exposition.plan_id)
        service = session.get(Service, plan.service_id) if plan is not None else None
        named = (service.name, service.version) if service is not None else ()
        return (exposition.name, exposition.id, plan.name if plan is not None else None, *named)

    found = (
        e
        for e in expositions.listed(session, caller.organization_id)
        if (plan_id is None or e.plan_id == plan_id) and (group_id is None or e.group_id == group_id)
    )
    return [exposition_view(session, e, caller.organization) for e in page.of(found, response, text)]


@router.get("/expositions/{exposition_id}", response_model=ExpositionView, tags=["expositions"])
def get_exposition(exposition_id: str, caller: UserCaller, session: DbSession) -> ExpositionView:
    exposition = get_owned(session, Exposition, caller.organization_id, exposition_id, "exposition")
    return exposition_view(session, exposition, caller.organization)


@router.patch("/expositions/{exposition_id}", response_model=ExpositionView, tags=["expositions"])
def update_exposition(
    exposition_id: str, body: ExpositionUpdate, caller: UserCaller, session: DbSession
) -> ExpositionView:
    values = body.model_dump(exclude_unset=True)
    exposition = expositions.update(session, caller.organization_id, exposition_id, values)
    return exposition_view(session, exposition, caller.organization)


@router.post(
    "/expositions/{exposition_id}/duplicate", response_model=ExpositionView, status_code=201, tags=["expositions"]
)
def duplicate_exposition(
    exposition_id: str, body: ExpositionDuplicate, caller: UserCaller, session: DbSession
) -> ExpositionView:
    exposition = expositions.duplicate(session, caller.organization_id, exposition_id, body.name)
    return exposition_view(session, exposition, caller.organization)


@router.delete("/expositions/{exposition_id}", status_code=204, tags=["expositions"])
def delete_exposition(exposition_id: str, caller: UserCaller, session: DbSession) -> None:
    expositions.delete(session, caller.organization_id, exposition_id)
