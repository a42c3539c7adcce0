"""Organization quotas: how many expositions, gateway groups and gateways an organization may have (on SQLite and
PostgreSQL, through the REST API)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from apimcp.gateway.sync import HttpSource, Refused
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


def _plan(org: Org) -> str:
    service = import_echo(org.user)
    plan: str = created(org.user.post("/plans", json={"service_id": service["id"], "name": "main"}))["id"]
    return plan


def test_no_quota_is_set_at_first_and_usage_is_counted(acme: Org) -> None:
    plan = _plan(acme)
    created(acme.user.post("/expositions", json={"plan_id": plan}))
    acme.snapshot("edge-1")
    shown = ok(acme.user.get("/organization/quotas"))
    assert shown == {
        "expositions": {"limit": None, "used": 1},
        "gateway_groups": {"limit": None, "used": 1},  # the default group
        "gateways": {"limit": None, "used": 1},
    }


def test_an_exposition_beyond_the_quota_is_refused_with_429_saying_which_quota(acme: Org) -> None:
    plan = _plan(acme)
    assert ok(acme.user.put("/organization/quotas", json={"expositions": 2}))["expositions"] == {"limit": 2, "used": 0}
    first = created(acme.user.post("/expositions", json={"plan_id": plan, "name": "one"}))
    created(acme.user.post(f"/expositions/{first['id']}/duplicate", json={"name": "two"}))
    refused = problem(acme.user.post("/expositions", json={"plan_id": plan, "name": "three"}), 429, "expositions")
    assert refused["detail"] == (
        "the organization's quota of 2 expositions is reached (2 in use); an admin can raise it"
    )
    assert refused["title"] == "Quota reached"
    problem(acme.user.post(f"/expositions/{first['id']}/duplicate", json={"name": "three"}), 429, "expositions")
    assert [e["name"] for e in ok(acme.user.get("/expositions"))] == ["one", "two"]
    # deleting one frees its place; raising the quota, or removing it, makes room too
    acme.user.delete(f"/expositions/{first['id']}")
    created(acme.user.post("/expositions", json={"plan_id": plan, "name": "three"}))
    ok(acme.user.put("/organization/quotas", json={"expositions": None}))
    created(acme.user.post("/expositions", json={"plan_id": plan, "name": "four"}))


def test_a_quota_of_one_reads_in_the_singular_and_zero_refuses_the_first(acme: Org) -> None:
    ok(acme.user.put("/organization/quotas", json={"gateway_groups": 1}))
    refused = problem(acme.user.post("/gateway-groups", json={"name": "eu", "labels": {"zone": "eu"}}), 429)
    assert refused["detail"] == (
        "the organization's quota of 1 gateway group is reached (1 in use); an admin can raise it"
    )
    ok(acme.user.put("/organization/quotas", json={"gateway_groups": 0, "expositions": 0}))
    plan = _plan(acme)
    body = problem(acme.user.post("/expositions", json={"plan_id": plan}), 429, "expositions")
    assert "quota of 0 expositions is reached (0 in use)" in body["detail"]


def test_a_quota_below_what_is_in_use_removes_nothing(acme: Org) -> None:
    created(acme.user.post("/gateway-groups", json={"name": "eu", "labels": {"zone": "eu"}}))
    shown = ok(acme.user.put("/organization/quotas", json={"gateway_groups": 1}))
    assert shown["gateway_groups"] == {"limit": 1, "used": 2}
    assert len(ok(acme.user.get("/gateway-groups"))) == 2
    problem(acme.user.post("/gateway-groups", json={"name": "us"}), 429, "gateway_groups")


def test_a_new_gateway_beyond_the_quota_is_refused_and_one_registering_again_is_not(acme: Org) -> None:
    ok(acme.user.put("/organization/quotas", json={"gateways": 1}))
    assert acme.snapshot_response("edge-1").status_code == 200
    assert acme.snapshot_response("edge-1", labels={"zone": "eu"}).status_code == 200  # the same gateway again
    refused = problem(acme.snapshot_response("edge-2"), 429, "gateways")
    assert refused["detail"] == "the organization's quota of 1 gateway is reached (1 in use); an admin can raise it"
    assert [g["name"] for g in ok(acme.user.get("/gateways"))] == ["edge-1"]
    ok(acme.user.put("/organization/quotas", json={"gateways": 2}))
    assert acme.snapshot_response("edge-2").status_code == 200


def test_a_gateway_refused_by_the_quota_is_told_why(api: Api, acme: Org) -> None:
    """The gateway's own side: the 429 is a refusal it logs once with the reason (not an unreachable control
    plane), and it asks again until there is room."""
    ok(acme.user.put("/organization/quotas", json={"gateways": 0}))

    async def fetch() -> None:
        async with aiohttp.ClientSession() as session:
            source = HttpSource(session, api.base, acme.gateway_token, "edge-9", acme.gateway_key.public)
            await source.fetch([])

    with pytest.raises(Refused) as refused:
        asyncio.run(fetch())
    assert str(refused.value) == (
        "the control plane refused this gateway: "
        "the organization's quota of 0 gateways is reached (0 in use); an admin can raise it"
    )
    ok(acme.user.put("/organization/quotas", json={"gateways": 1}))
    asyncio.run(fetch())
    assert [g["name"] for g in ok(acme.user.get("/gateways"))] == ["edge-9"]


def test_setting_a_quota_leaves_the_others_and_checks_each_value(acme: Org) -> None:
    ok(acme.user.put("/organization/quotas", json={"expositions": 5, "gateways": 3}))
    shown = ok(acme.user.put("/organization/quotas", json={"gateway_groups": 4}))
    assert {kind: quota["limit"] for kind, quota in shown.items()} == {
        "expositions": 5,
        "gateway_groups": 4,
        "gateways": 3,
    }
    problem(acme.user.put("/organization/quotas", json={"expositions": -1}), 422, "expositions")
    problem(acme.user.put("/organization/quotas", json={"expositions": 1.5}), 422, "expositions")
    problem(acme.user.put("/organization/quotas", json={"plans": 3}), 422, "plans")
    assert ok(acme.user.get("/organization/quotas"))["expositions"]["limit"] == 5


def test_only_an_admin_sets_quotas_and_anyone_in_the_organization_reads_them(api: Api, acme: Org) -> None:
    member = api.member(acme)
    body = problem(member.put("/organization/quotas", json={"expositions": 100}), 403)
    assert "admin" in body["detail"]
    assert ok(member.get("/organization/quotas"))["expositions"]["limit"] is None


def test_quotas_are_the_organizations_own(api: Api, acme: Org) -> None:
    beta = api.org("beta")
    ok(acme.user.put("/organization/quotas", json={"expositions": 0}))
    created(beta.user.post("/expositions", json={"plan_id": _plan(beta)}))
    assert ok(beta.user.get("/organization/quotas"))["expositions"] == {"limit": None, "used": 1}
