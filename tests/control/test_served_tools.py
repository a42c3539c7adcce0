"""What the control plane reports an exposition serves (discovery reports, policy checks): the catalog its
gateways serve, which for a plan trusting its MCP server's changes is the one not accepted yet."""

from __future__ import annotations

import dataclasses
import hashlib

from apimcp.catalog.codec import decode_service, encode_service
from apimcp.control.domain import discovery, expositions, plans
from apimcp.control.models import Service
from apimcp.control.plane import ControlPlane
from tests.control.factories import import_echo, new_org


def test_a_plan_trusting_changes_is_told_of_the_catalog_its_gateways_serve(plane: ControlPlane) -> None:
    """The finding: discovery reports and `policy test` read the accepted catalog, while a trusting plan's gateways
    served the changed one (a tool more, in the helper's case), and the report's cache key missed the change."""
    organization_id = new_org(plane, "trusting")
    imported = import_echo(plane, organization_id)
    with plane.session() as session:
        plan, _ = plans.create(session, organization_id, imported.service.id, "p", {})
        exposition = expositions.create(session, organization_id, plan.id).id
        service = session.get(Service, imported.service.id)
        assert service is not None
        accepted = decode_service(service.compiled)
        changed = encode_service(dataclasses.replace(accepted, operations=accepted.operations[:1]))
        service.pending_compiled, service.pending_hash = changed, hashlib.sha256(changed).hexdigest()
        assert len(discovery.served_operations(session, plan)[1]) == len(accepted.operations)
        before = discovery.served_tools(session, organization_id, exposition)
        plan.trust_changes = True
        assert [o.tool_name for o in discovery.served_operations(session, plan)[1]] == ["get_item"]
        after = discovery.served_tools(session, organization_id, exposition)
        assert [tool.name for tool in after.tools] == ["get_item"] and after.version != before.version
