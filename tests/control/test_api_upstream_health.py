"""What gateways say of the MCP servers they front reaches each service's view, per gateway, while fresh; only a
gateway's token reports, only registered gateways count, and what a report holds is checked."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from apimcp.control.models import Gateway, utcnow
from tests.control.api_harness import Api, import_echo, ok, problem


def test_a_gateway_s_report_is_shown_with_the_service_while_the_gateway_is_seen(api: Api) -> None:
    acme = api.org("acme-health")
    service = import_echo(acme.user)
    assert ok(acme.user.get(f"/services/{service['id']}"))["upstream_health"] == []
    report = {"name": "edge-1", "upstreams": {service["id"]: "failing"}}
    assert acme.gateway.post("/gateway/upstreams", json=report).status_code == 202  # not registered yet: ignored
    assert ok(acme.user.get(f"/services/{service['id']}"))["upstream_health"] == []

    ok(acme.snapshot_response("edge-1"))  # registers edge-1
    assert acme.gateway.post("/gateway/upstreams", json=report).status_code == 202
    shown = ok(acme.user.get(f"/services/{service['id']}"))["upstream_health"]
    assert [(h["gateway"], h["state"]) for h in shown] == [("edge-1", "failing")]

    with api.plane.session() as session:  # edge-1 has not been seen for ten minutes
        session.execute(update(Gateway).values(last_seen=utcnow() - timedelta(minutes=10)))
    assert ok(acme.user.get(f"/services/{service['id']}"))["upstream_health"] == []


def test_only_a_gateway_reports_and_what_it_reports_is_checked(api: Api) -> None:
    acme = api.org("acme-health-2")
    ok(acme.snapshot_response("edge-2"))
    bad_state = {"name": "edge-2", "upstreams": {"svc": "exploded"}}
    problem(acme.gateway.post("/gateway/upstreams", json=bad_state), 422, "upstreams")
    as_user = acme.user.post("/gateway/upstreams", json={"name": "edge-2", "upstreams": {}})
    assert as_user.status_code in (401, 403)
