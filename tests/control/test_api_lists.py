"""Search, filters and pages on every list of the REST API: `q`, `limit`, `offset`, the total in `X-Total-Count`,
and 422 for values out of range."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from apimcp.control.api.paging import MAX_LIMIT, MAX_QUERY, TOTAL_HEADER
from apimcp.control.domain import people
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem
from tests.support.many_operations import many_operations


def listed(client: httpx2.Client, path: str, **query: Any) -> tuple[list[Any], int]:
    """A list's page and the total it announces."""
    response = client.get(path, params=query)
    items = ok(response)
    assert isinstance(items, list)
    return items, int(response.headers[TOTAL_HEADER])


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


@pytest.fixture
def acme(api: Api) -> Org:
    return api.org("acme")


def test_a_service_operations_are_searched_filtered_and_paged(acme: Org) -> None:
    many = import_echo(acme.user, "many", "1", many_operations(120))
    path = f"/services/{many['id']}/operations"

    everything, total = listed(acme.user, path)
    assert total == 120
    assert names(everything, "tool_name") == [f"op{n:04d}" for n in range(1, 121)]  # the description's order
    assert everything[0] == {
        "tool_name": "op0001",
        "signature": "GET /things/0001",
        "operation_id": "op0001",
        "title": "Read thing number 1",
        "tags": ["odd"],
    }

    second, total = listed(acme.user, path, limit=50, offset=50)
    assert (names(second, "tool_name")[0], names(second, "tool_name")[-1], len(second), total) == (
        "op0051",
        "op0100",
        50,
        120,
    )
    last, total = listed(acme.user, path, limit=50, offset=100)
    assert (len(last), total) == (20, 120)
    beyond, total = listed(acme.user, path, offset=500)
    assert (beyond, total) == ([], 120)

    # q: every word, case-insensitively, in the tool name, signature, operationId, title, tags or description
    assert names(listed(acme.user, path, q="OP0077")[0], "tool_name") == ["op0077"]
    assert names(listed(acme.user, path, q="get /things/0042")[0], "tool_name") == ["op0042"]
    assert names(listed(acme.user, path, q="number 11 odd")[0], "tool_name") == [
        "op0011",
        *(f"op{n:04d}" for n in range(111, 120, 2)),
    ]
    assert listed(acme.user, path, q="nothing like it") == ([], 0)
    assert listed(acme.user, path, q="   ")[1] == 120  # blank: no search

    # filters: an exact tag, the signature's first word; with q and pages
    assert names(listed(acme.user, path, tag="HUNDRED")[0], "tool_name") == ["op0100"]
    assert listed(acme.user, path, tag="even", limit=10)[1] == 60
    assert listed(acme.user, path, method="get")[1] == 120
    assert listed(acme.user, path, method="POST") == ([], 0)
    page, total = listed(acme.user, path, tag="odd", q="op005", limit=3, offset=1)
    assert (names(page, "tool_name"), total) == (["op0053", "op0055", "op0057"], 5)  # 51, 53, 55, 57, 59

    # the service's own view still holds every operation
    assert len(ok(acme.user.get(f"/services/{many['id']}"))["operations"]) == 120
    alone = ok(acme.user.get(f"/services/{many['id']}", params={"operations": "false"}))
    assert (alone["operations"], alone["operation_count"]) == ([], 120)
    problem(acme.user.get("/services/nope/operations"), 404)
    problem(acme.user.get(path, params={"method": "GET /x"}), 422, "method")


def test_services_plans_and_expositions_are_searched_and_filtered(api: Api, acme: Org) -> None:
    echo = import_echo(acme.user, "echo", "1")
    shop = import_echo(acme.user, "shop", "2")
    other = api.org("other")
    import_echo(other.user, "echo-elsewhere", "1")

    assert (names(listed(acme.user, "/services")[0]), listed(acme.user, "/services")[1]) == (["echo", "shop"], 2)
    assert names(listed(acme.user, "/services", q="SHOP")[0]) == ["shop"]
    assert names(listed(acme.user, "/services", q="REQUEST it received")[0]) == ["echo", "shop"]  # description
    assert names(listed(acme.user, "/services", q="2")[0]) == ["shop"]  # version
    assert listed(acme.user, "/services", kind="openapi")[1] == 2
    assert listed(acme.user, "/services", kind="graphql") == ([], 0)
    assert names(listed(acme.user, "/services", limit=1, offset=1)[0]) == ["shop"]

    main = created(acme.user.post("/plans", json={"service_id": echo["id"], "name": "main"}))
    beta = created(acme.user.post("/plans", json={"service_id": echo["id"], "name": "beta", "description": "Try"}))
    store = created(acme.user.post("/plans", json={"service_id": shop["id"], "name": "store"}))
    assert listed(acme.user, "/plans")[1] == 3
    assert sorted(names(listed(acme.user, "/plans", service_id=echo["id"])[0])) == ["beta", "main"]
    assert names(listed(acme.user, "/plans", q="try")[0]) == ["beta"]
    assert names(listed(acme.user, "/plans", q="shop")[0]) == ["store"]  # the service's name
    assert listed(acme.user, "/plans", service_id=echo["id"], q="store") == ([], 0)

    group = created(acme.user.post("/gateway-groups", json={"name": "edge", "labels": {"zone": "eu"}}))
    one = created(acme.user.post("/expositions", json={"plan_id": main["id"], "name": "first"}))
    two = created(
        acme.user.post("/expositions", json={"plan_id": beta["id"], "name": "second", "group_id": group["id"]})
    )
    created(acme.user.post("/expositions", json={"plan_id": store["id"], "name": "third"}))
    assert listed(acme.user, "/expositions")[1] == 3
    assert names(listed(acme.user, "/expositions", plan_id=main["id"])[0]) == ["first"]
    assert names(listed(acme.user, "/expositions", group_id=group["id"])[0]) == ["second"]
    assert names(listed(acme.user, "/expositions", q="SECOND")[0]) == ["second"]
    assert names(listed(acme.user, "/expositions", q="beta")[0]) == ["second"]  # the plan's name
    assert names(listed(acme.user, "/expositions", q="shop 2")[0]) == ["third"]  # the service's
    assert names(listed(acme.user, "/expositions", q=one["id"])[0]) == ["first"]
    page, total = listed(acme.user, "/expositions", limit=2)
    assert (len(page), total) == (2, 3)
    assert page[0]["endpoints"] == ok(acme.user.get(f"/expositions/{page[0]['id']}"))["endpoints"]
    assert listed(acme.user, "/expositions", plan_id=two["plan_id"], group_id="elsewhere") == ([], 0)

    every_group, total = listed(acme.user, "/gateway-groups")
    assert (sorted(names(every_group)), total) == (["default", "edge"], 2)
    assert names(listed(acme.user, "/gateway-groups", q="zone=eu")[0]) == ["edge"]

    artifacts, total = listed(acme.user, f"/services/{echo['id']}/artifacts", q="main")
    assert (names(artifacts, "role"), total) == (["main"], 1)


def test_gateways_keys_secrets_and_tokens_are_searched(acme: Org) -> None:
    acme.snapshot("edge-paris", labels={"zone": "eu"}, version="9.9")
    acme.snapshot("edge-ohio", labels={"zone": "us"})
    assert listed(acme.user, "/gateways")[1] == 2
    assert names(listed(acme.user, "/gateways", q="EU")[0]) == ["edge-paris"]
    assert names(listed(acme.user, "/gateways", q="9.9")[0]) == ["edge-paris"]
    assert names(listed(acme.user, "/gateways", limit=1, offset=1)[0]) == ["edge-paris"]  # by name

    keys, total = listed(acme.user, "/gateway-keys")
    assert total == len(keys) >= 1
    fingerprint = keys[0]["fingerprint"]
    assert names(listed(acme.user, "/gateway-keys", q=fingerprint.upper())[0]) == [keys[0]["name"]]

    for name, description in (("alpha", "for the billing API"), ("beta", None), ("gamma", "billing too")):
        body = {"name": name, "kind": "bearer", "values": {"token": "t0ps3cret"}}
        created(acme.user.post("/secrets", json=body if description is None else {**body, "description": description}))
    created(acme.user.post("/secrets", json={"name": "delta", "kind": "basic", "values": {"password": "pw"},
                                             "fields": {"username": "robot"}}))  # fmt: skip
    assert listed(acme.user, "/secrets")[1] == 4
    assert names(listed(acme.user, "/secrets", q="billing")[0]) == ["alpha", "gamma"]
    assert names(listed(acme.user, "/secrets", q="robot")[0]) == ["delta"]  # a public field
    assert names(listed(acme.user, "/secrets", kind="basic")[0]) == ["delta"]
    assert names(listed(acme.user, "/secrets", kind="bearer", limit=1, offset=2)[0]) == ["gamma"]
    assert "t0ps3cret" not in acme.user.get("/secrets", params={"q": "t0ps3cret"}).text

    created(acme.user.post("/tokens", json={"name": "ci robot", "kind": "user"}))
    everything, total = listed(acme.user, "/tokens")
    assert total == len(everything) == 3  # tester (admin), edge (gateway), ci robot
    assert names(listed(acme.user, "/tokens", q="Robot")[0]) == ["ci robot"]
    assert names(listed(acme.user, "/tokens", kind="gateway")[0]) == ["edge"]
    prefix = everything[0]["prefix"]
    assert everything[0]["name"] in names(listed(acme.user, "/tokens", q=prefix)[0])


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("/services", {"limit": 0}, "limit"),
        ("/services", {"limit": MAX_LIMIT + 1}, "limit"),
        ("/plans", {"limit": "many"}, "limit"),
        ("/expositions", {"offset": -1}, "offset"),
        ("/secrets", {"offset": "x"}, "offset"),
        ("/tokens", {"q": "x" * (MAX_QUERY + 1)}, "q"),
        ("/services", {"kind": "soap"}, "kind"),
        ("/tokens", {"kind": "root"}, "kind"),
        ("/gateways", {"limit": -5}, "limit"),
        ("/gateway-groups", {"offset": 10_000_000}, "offset"),
        ("/gateway-keys", {"limit": 1.5}, "limit"),
    ],
)
def test_bad_values_are_refused_naming_them(acme: Org, path: str, query: dict[str, Any], field: str) -> None:
    body = problem(acme.user.get(path, params=query), 422, field)
    assert body["detail"].startswith(f"{field}: ")


def test_a_member_pages_too_and_the_default_keeps_whole_lists(api: Api, acme: Org) -> None:
    member = api.member(acme)
    for n in range(3):
        import_echo(acme.user, f"svc{n}", "1")
    response = member.get("/services")
    assert (len(ok(response)), response.headers[TOTAL_HEADER]) == (3, "3")
    assert names(listed(member, "/services", limit=2, offset=2)[0]) == ["svc2"]


def test_members_and_invitations_are_searched_and_paged(api: Api, acme: Org) -> None:
    for n in range(3):
        created(acme.user.post("/invitations", json={"email": f"p{n}@example.com", "role": "viewer"}))
    page = acme.user.get("/invitations", params={"limit": 2})
    assert page.status_code == 200 and len(page.json()) == 2 and page.headers["X-Total-Count"] == "3"
    assert [i["email"] for i in ok(acme.user.get("/invitations", params={"q": "p1"}))] == ["p1@example.com"]
    code = created(acme.user.post("/invitations", json={"email": "ann@example.com", "role": "editor"}))["code"]
    ok(api.client().post("/invitations/accept", json={"code": code}))
    members = acme.user.get("/members", params={"q": "ann editor"})
    assert [m["user"]["email"] for m in members.json()] == ["ann@example.com"]
    assert members.headers["X-Total-Count"] == "1"


def test_an_organization_keeps_a_bounded_number_of_invitations(acme: Org, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(people, "MAX_PENDING_INVITATIONS", 2)
    for n in range(2):
        created(acme.user.post("/invitations", json={"email": f"q{n}@example.com", "role": "viewer"}))
    refused = problem(acme.user.post("/invitations", json={"email": "q2@example.com", "role": "viewer"}), 409)
    assert "2 invitations not accepted yet" in refused["detail"]
