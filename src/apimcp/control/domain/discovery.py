"""An exposition's tools as its gateways serve them (its plan's operations of its service), for its discovery
report (`apimcp.findability`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from apimcp.catalog.codec import decode_service
from apimcp.catalog.model import Operation, RestBinding
from apimcp.catalog.selection import served_selection
from apimcp.catalog.tools import tool_of
from apimcp.control.domain.common import get_owned
from apimcp.control.domain.upstream_changes import served_to
from apimcp.control.models import Exposition, Plan, Service
from apimcp.protocol.models import Tool


@dataclass(frozen=True, slots=True)
class ServedTools:
    tools: list[Tool]
    paths: Mapping[str, Sequence[str]]
    """Each REST tool's `METHOD /path`, which search ranks on as the gateway's does."""
    version: tuple[str, str, str]
    """Changes when the tools may: the plan's last change and the service's compiled content."""


def served_operations(session: Session, plan: Plan) -> tuple[Service, list[Operation]]:
    """The plan's service, and its operations the plan selects, named with its prefix: of the catalog its gateways
    serve (an MCP server's changes not accepted yet, when the plan trusts them)."""
    service = session.get(Service, plan.service_id)
    assert service is not None  # foreign keys
    catalog = decode_service(served_to(plan.trust_changes, service)[1])
    return service, served_selection(catalog.operations, plan.include or [], plan.exclude or [], plan.tool_prefix or "")


def served_tools(session: Session, organization_id: str, exposition_id: str) -> ServedTools:
    """The tools `exposition_id` serves: its plan's selection of its service's operations, named with its prefix
    (custom tools are not among them)."""
    exposition = get_owned(session, Exposition, organization_id, exposition_id, "exposition")
    plan = session.get(Plan, exposition.plan_id)
    assert plan is not None  # foreign keys
    service, operations = served_operations(session, plan)
    tools = [tool_of(operation, output_schema=plan.output_schemas) for operation in operations]
    paths = {o.tool_name: (o.signature,) for o in operations if isinstance(o.binding, RestBinding)}
    return ServedTools(tools, paths, (plan.id, str(plan.updated_at), served_to(plan.trust_changes, service)[0]))
