"""Refusals as RFC 9457 problem details: the status, a title, a detail, and the field at fault."""

from __future__ import annotations

from typing import Any

import pytest

from tests.control.api_harness import ECHO_API, Api, Org, created, import_echo, ok, problem


def _with_plan(api: Api) -> tuple[Org, dict[str, Any], dict[str, Any]]:
    acme = api.org("acme")
    service = import_echo(acme.user)
    plan = created(acme.user.post("/plans", json={"service_id": service["id"], "name": "main"}))
    return acme, service, plan


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/gateway-groups", {}, "name"),
        ("/gateway-groups", {"name": "-bad"}, "name"),
        ("/gateway-groups", {"name": "g", "labels": {"zone": 3}}, "labels.zone"),
        ("/secrets", {"name": "s", "kind": "password", "values": {"token": "t"}}, "kind"),
        ("/secrets", {"kind": "bearer", "values": {"token": "t"}}, "name"),
        ("/secrets", {"name": "s", "kind": "bearer"}, "values.token"),  # values may be omitted, not the token
        ("/secrets", {"name": "s", "kind": "bearer", "values": {}}, "values.token"),
        ("/secrets", {"name": "s", "kind": "bearer", "values": {"token": "t", "extra": "x"}}, "values.extra"),
        ("/secrets", {"name": "s", "kind": "basic", "values": {"password": "p"}}, "fields.username"),
        (
            "/secrets",
            {"name": "s", "kind": "api_key", "fields": {"name": "X-Key", "location": "body"}, "values": {"value": "v"}},
            "fields.location",
        ),
        (
            "/secrets",
            {
                "name": "s",
                "kind": "oauth_client_credentials",
                "fields": {"token_url": "ftp://idp/token", "client_id": "c"},
                "values": {"client_secret": "x"},
            },
            "fields.token_url",
        ),
        ("/tokens", {"name": "t", "kind": "root"}, "kind"),
        ("/expositions", {}, "plan_id"),
    ],
)
def test_invalid_bodies_name_the_field(api: Api, path: str, body: dict[str, Any], field: str) -> None:
    acme = api.org("acme")
    answer = problem(acme.user.post(path, json=body), 422, field)
    assert answer["title"] == "Invalid value"
    assert ok(acme.user.get("/secrets")) == []
    assert [g["name"] for g in ok(acme.user.get("/gateway-groups"))] == ["default"]


def test_request_validation_lists_every_error(api: Api) -> None:
    acme = api.org("acme")
    answer = problem(acme.user.post("/secrets", json={"kind": "password"}), 422)
    fields = {error["field"] for error in answer["errors"]}
    assert fields == {"name", "kind"}
    assert answer["field"] in fields
    assert answer["detail"].startswith(f"{answer['field']}: ")


def test_a_body_that_is_not_json_is_a_problem_too(api: Api) -> None:
    acme = api.org("acme")
    response = acme.user.post("/gateway-groups", content=b"{not json", headers={"content-type": "application/json"})
    problem(response, 422)
    response = acme.user.post("/services", content=b"{not json", headers={"content-type": "application/json"})
    problem(response, 422)
    problem(acme.user.post("/services", json={"name": "x"}), 422, "url")
    problem(acme.user.post("/services", json={"url": "https://example.invalid/x", "colour": 1}), 422, "colour")
    assert ok(acme.user.get("/services")) == []


@pytest.mark.parametrize(
    ("values", "field", "phrase"),
    [
        ({"cache": {"tools/call": {"ttl_ms": 1000}}}, "cache", "tools/call cannot be cached"),
        ({"cache": {"tools/list": {"ttl_ms": -1}}}, "cache.tools/list.ttl_ms", ""),
        # past 64 bits, the history's JSON could not be written: a 500 (found by review)
        ({"cache": {"tools/list": {"ttl_ms": 2**64}}}, "cache.tools/list.ttl_ms", ""),
        ({"cache": {"tools/list": {"ttl_ms": 365 * 24 * 3600 * 1000 + 1}}}, "cache.tools/list.ttl_ms", ""),
        ({"cache": {"tools/list": {"ttl_ms": 5, "scope": "world"}}}, "cache.tools/list.scope", ""),
        ({"include": ["get_itme"]}, "include", "get_itme"),
        ({"include": ["get_*"], "exclude": ["tag:nothing"]}, "exclude", "tag:nothing"),
        ({"backend_endpoint": "ftp://files.example.com"}, "backend_endpoint", "http"),
        ({"backend_endpoint": "not a url"}, "backend_endpoint", "http"),
        ({"backend_timeout_ms": 0}, "backend_timeout_ms", ""),
        ({"backend_timeout_ms": 3_600_001}, "backend_timeout_ms", ""),
        ({"tool_prefix": "has space"}, "tool_prefix", ""),
        ({"inbound_mode": "kerberos"}, "inbound_mode", ""),
        ({"inbound_mode": "oauth"}, "oauth", "needs oauth settings"),
        ({"inbound_mode": "oauth", "oauth": {"issuers": []}}, "oauth.issuers", "at least one"),
        ({"inbound_mode": "oauth", "oauth": {"issuers": ["http://idp.example.com"]}}, "oauth.issuers", "https"),
        (
            {"inbound_mode": "oauth", "oauth": {"issuers": ["https://i"], "algorithms": ["HS256"]}},
            "oauth.algorithms",
            "HS256 is not accepted",
        ),
        (
            {"inbound_mode": "oauth", "oauth": {"issuers": ["https://i"], "tool_scopes": {"get_itme": ["a"]}}},
            "oauth.tool_scopes.get_itme",
            "not a tool",
        ),
        ({"oauth": {"issuers": ["https://i"]}}, "oauth", "inbound_mode is oauth"),
        ({"header_policy": {"allow": ["mcp-session-id"]}}, "header_policy.allow", "never passed on"),
        ({"audit": "maybe"}, "audit", ""),
        ({"artifacts": ["missing.yaml"]}, "artifacts", "missing.yaml"),
        ({"secret_id": None, "colour": "red"}, "colour", ""),
    ],
)
def test_plan_values_are_checked(api: Api, values: dict[str, Any], field: str, phrase: str) -> None:
    acme, service, plan = _with_plan(api)
    before = ok(acme.user.get(f"/plans/{plan['id']}"))
    answer = problem(acme.user.post("/plans", json={"service_id": service["id"], "name": "new", **values}), 422, field)
    assert phrase in answer["detail"]
    answer = problem(acme.user.patch(f"/plans/{plan['id']}", json=values), 422, field)
    assert phrase in answer["detail"]
    assert ok(acme.user.get(f"/plans/{plan['id']}")) == before
    assert [p["name"] for p in ok(acme.user.get("/plans"))] == ["main"]


def test_a_refused_update_changes_nothing(api: Api) -> None:
    acme, _, plan = _with_plan(api)
    before = ok(acme.user.get(f"/plans/{plan['id']}"))
    # a valid value next to an invalid one: neither is kept
    response = acme.user.patch(
        f"/plans/{plan['id']}", json={"description": "changed", "backend_endpoint": "gopher://x", "include": ["get_*"]}
    )
    problem(response, 422, "backend_endpoint")
    assert ok(acme.user.get(f"/plans/{plan['id']}")) == before


HOSTLESS = b"""swagger: "2.0"
info: {title: Hostless, version: "1"}
basePath: /v1
paths:
  /items: {get: {operationId: listItems, responses: {"200": {description: ok}}}}
"""


def test_a_plan_without_a_backend_of_a_service_whose_only_server_is_a_path_is_refused(api: Api) -> None:
    """Finding: a Swagger 2.0 description without host (its server: /v1) made a plan without a backend, and every
    call failed with "The backend URL is not valid: /v1/items"."""
    acme = api.org("acme")
    service = import_echo(acme.user, "hostless", "1", HOSTLESS)
    answer = problem(acme.user.post("/plans", json={"service_id": service["id"], "name": "p"}), 422, "backend_endpoint")
    assert answer["detail"] == (
        "hostless gives only a path as its server URL ('/v1'), with no host to call (as a Swagger 2.0 description "
        "without host does): the plan needs a backend endpoint (the API's URL)"
    )
    backed = {"service_id": service["id"], "name": "p", "backend_endpoint": "https://api.example.com/v1"}
    plan = created(acme.user.post("/plans", json=backed))
    problem(acme.user.patch(f"/plans/{plan['id']}", json={"backend_endpoint": None}), 422, "backend_endpoint")


def test_a_service_without_servers_needs_a_backend_endpoint(api: Api) -> None:
    acme = api.org("acme")
    text = ECHO_API.read_text()
    start, end = text.index("servers:"), text.index("paths:")
    service = import_echo(acme.user, "bare", "1", (text[:start] + text[end:]).encode())
    response = acme.user.post("/plans", json={"service_id": service["id"], "name": "p"})
    assert "backend endpoint" in problem(response, 422, "backend_endpoint")["detail"]
    plan = created(
        acme.user.post(
            "/plans", json={"service_id": service["id"], "name": "p", "backend_endpoint": "https://api.example.com"}
        )
    )
    assert plan["backend_endpoint"] == "https://api.example.com"
    problem(acme.user.patch(f"/plans/{plan['id']}", json={"backend_endpoint": None}), 422, "backend_endpoint")


@pytest.mark.parametrize(
    "path",
    [
        "/services/0000000000000",
        "/services/0000000000000/artifacts",
        "/plans/0000000000000",
        "/secrets/0000000000000",
        "/gateway-groups/0000000000000",
        "/expositions/0000000000000",
    ],
)
def test_unknown_ids_are_not_found(api: Api, path: str) -> None:
    acme = api.org("acme")
    answer = problem(acme.user.get(path), 404)
    assert answer["title"] == "Not found"
    assert "0000000000000" in answer["detail"]


def test_an_exposition_of_an_unknown_plan_or_group_is_not_found(api: Api) -> None:
    acme, _, plan = _with_plan(api)
    problem(acme.user.post("/expositions", json={"plan_id": "nope"}), 404)
    problem(acme.user.post("/expositions", json={"plan_id": plan["id"], "group_id": "nope"}), 404)
    problem(acme.user.post("/plans", json={"service_id": "nope", "name": "x"}), 404)
    assert ok(acme.user.get("/expositions")) == []


# --- conflicts ---------------------------------------------------------------------------------------


def test_duplicate_names_are_conflicts(api: Api) -> None:
    acme, service, plan = _with_plan(api)
    user = acme.user
    created(user.post("/gateway-groups", json={"name": "edge"}))
    problem(user.post("/gateway-groups", json={"name": "edge"}), 409, "name")
    problem(user.post("/gateway-groups", json={"name": "default"}), 409, "name")

    created(user.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "1"}}))
    answer = problem(user.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "2"}}), 409, "name")
    assert answer["title"] == "Conflict"

    problem(user.post("/plans", json={"service_id": service["id"], "name": "main"}), 409, "name")
    problem(user.post(f"/plans/{plan['id']}/duplicate", json={"name": "main"}), 409, "name")

    first = created(user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    second = created(user.post("/expositions", json={"plan_id": plan["id"], "name": "store"}))
    problem(user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}), 409, "name")
    problem(user.patch(f"/expositions/{second['id']}", json={"name": "shop"}), 409, "name")
    problem(user.post(f"/expositions/{first['id']}/duplicate", json={"name": "store"}), 409, "name")
    # renaming an exposition to its own name is no conflict
    assert ok(user.patch(f"/expositions/{first['id']}", json={"name": "shop"}))["name"] == "shop"

    main = ok(user.get(f"/services/{service['id']}/artifacts"))[0]
    response = user.post(
        f"/services/{service['id']}/artifacts",
        data={"name": main["name"]},
        files={"file": ("x.yaml", b"a: 1\n", "application/yaml")},
    )
    problem(response, 409, "name")
    assert ok(user.get(f"/services/{service['id']}/artifacts")) == [main]

    assert sorted(g["name"] for g in ok(user.get("/gateway-groups"))) == ["default", "edge"]
    assert [s["name"] for s in ok(user.get("/secrets"))] == ["s"]
    assert [p["name"] for p in ok(user.get("/plans"))] == ["main"]
    assert sorted(e["name"] for e in ok(user.get("/expositions"))) == ["shop", "store"]


def test_objects_in_use_cannot_be_deleted(api: Api) -> None:
    acme, service, plan = _with_plan(api)
    user = acme.user
    secret = created(user.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "1"}}))
    ok(user.patch(f"/plans/{plan['id']}", json={"secret_id": secret["id"]}))
    assert "main" in problem(user.delete(f"/secrets/{secret['id']}"), 409)["detail"]
    group = created(user.post("/gateway-groups", json={"name": "edge"}))
    exposition = created(user.post("/expositions", json={"plan_id": plan["id"], "group_id": group["id"]}))
    problem(user.delete(f"/gateway-groups/{group['id']}"), 409)
    main = ok(user.get(f"/services/{service['id']}/artifacts"))[0]
    problem(user.delete(f"/artifacts/{main['id']}"), 409)
    assert ok(user.get(f"/secrets/{secret['id']}"))["name"] == "s"
    assert ok(user.get(f"/gateway-groups/{group['id']}"))["name"] == "edge"
    assert ok(user.get(f"/services/{service['id']}/artifacts")) == [main]

    # once unused, they go
    assert user.delete(f"/expositions/{exposition['id']}").status_code == 204
    assert user.delete(f"/gateway-groups/{group['id']}").status_code == 204
    ok(user.patch(f"/plans/{plan['id']}", json={"secret_id": None}))
    assert user.delete(f"/secrets/{secret['id']}").status_code == 204
    problem(user.get(f"/secrets/{secret['id']}"), 404)
    problem(user.get(f"/gateway-groups/{group['id']}"), 404)


def test_deleting_a_service_takes_its_plans_and_expositions(api: Api) -> None:
    acme, service, plan = _with_plan(api)
    other = import_echo(acme.user, "other", "1")
    kept = created(acme.user.post("/plans", json={"service_id": other["id"], "name": "main"}))
    created(acme.user.post("/expositions", json={"plan_id": plan["id"], "name": "gone"}))
    created(acme.user.post("/expositions", json={"plan_id": kept["id"], "name": "kept"}))
    assert acme.user.delete(f"/services/{service['id']}").status_code == 204
    problem(acme.user.get(f"/services/{service['id']}"), 404)
    problem(acme.user.get(f"/plans/{plan['id']}"), 404)
    assert [p["id"] for p in ok(acme.user.get("/plans"))] == [kept["id"]]
    assert [e["name"] for e in ok(acme.user.get("/expositions"))] == ["kept"]
    assert [s["name"] for s in ok(acme.user.get("/services"))] == ["other"]


# --- re-import ---------------------------------------------------------------------------------------


def test_reimporting_the_same_name_and_version_updates_in_place(api: Api) -> None:
    acme, service, plan = _with_plan(api)
    assert service["created"] is True
    assert service["operation_count"] == 16
    exposition = created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))
    text = ECHO_API.read_text()
    smaller = text.replace("  /slow:\n", "  /slower:\n").replace("operationId: slow\n", "operationId: slower\n")
    smaller = smaller.replace("Every operation answers", "Each operation answers")
    response = acme.user.post(
        "/services",
        files={"file": ("echo.yaml", smaller.encode(), "application/yaml")},
        data={"name": "echo", "version": "1"},
    )
    assert response.status_code in (200, 201), response.text
    again = response.json()
    assert again["created"] is False
    assert again["id"] == service["id"]
    assert again["description"].startswith("Each operation answers")
    detail = ok(acme.user.get(f"/services/{service['id']}"))
    assert "slower" in {op["tool_name"] for op in detail["operations"]}
    assert "slow" not in {op["tool_name"] for op in detail["operations"]}
    assert len(ok(acme.user.get("/services"))) == 1
    assert len(ok(acme.user.get(f"/services/{service['id']}/artifacts"))) == 1
    # what used the service still does
    assert ok(acme.user.get(f"/plans/{plan['id']}"))["service_id"] == service["id"]
    assert ok(acme.user.get(f"/expositions/{exposition['id']}"))["plan_id"] == plan["id"]
    # another version is another service
    other = import_echo(acme.user, "echo", "2")
    assert other["created"] is True
    assert other["id"] != service["id"]
    assert sorted(s["version"] for s in ok(acme.user.get("/services"))) == ["1", "2"]


def test_an_upload_names_the_service_from_the_description_by_default(api: Api) -> None:
    acme = api.org("acme")
    response = acme.user.post("/services", files={"file": ("echo.yaml", ECHO_API.read_bytes(), "application/yaml")})
    service = created(response)
    assert service["version"] == "2.1"
    assert service["name"]
    assert ok(acme.user.get(f"/services/{service['id']}"))["name"] == service["name"]


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (b"openapi: [unclosed", "not valid JSON or YAML"),
        (b"swagger: '1.2'\n", ""),
        (b"- just\n- a list\n", ""),
        (b'{"openapi": "4.0.0", "info": {"title": "x", "version": "1"}, "paths": {}}', "3.x"),
    ],
)
def test_an_invalid_upload_is_refused(api: Api, content: bytes, phrase: str) -> None:
    acme = api.org("acme")
    response = acme.user.post("/services", files={"file": ("bad.yaml", content, "application/yaml")})
    assert phrase in problem(response, 422, "file")["detail"]
    assert ok(acme.user.get("/services")) == []


def test_an_upload_without_a_file_part_is_refused(api: Api) -> None:
    acme = api.org("acme")
    response = acme.user.post("/services", files={"other": ("x.yaml", b"a: 1", "application/yaml")})
    problem(response, 422, "file")
    assert ok(acme.user.get("/services")) == []


def test_routing_refusals_are_problem_details_too(api: Api) -> None:
    acme = api.org("acme")
    assert problem(acme.user.get("/nothing-here"), 404)["title"] == "Not Found"
    response = acme.user.put("/services")
    assert problem(response, 405)["title"] == "Method Not Allowed"
    assert response.headers["allow"]  # kept from the routing refusal


def test_a_value_the_database_will_not_keep_is_an_invalid_value(api: Api) -> None:
    """PostgreSQL keeps no NUL in text, nor text longer than its column: the request's mistake (422), never a 500
    (SQLite keeps both: there the plan is not found, the token made)."""
    acme = api.org("acme")
    for answer in (acme.user.get("/plans/ab%00cd"), acme.user.post("/tokens", json={"name": "t\x00n"})):
        assert answer.status_code in (404, 201, 422), answer.text
        if answer.status_code == 422:
            assert "NUL character, or is longer than its field allows" in problem(answer, 422)["detail"]
    long_name = problem(acme.user.post("/tokens", json={"name": "n" * 101}), 422)
    assert long_name["field"] == "name"
