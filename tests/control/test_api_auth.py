"""The REST API's front door: its OpenAPI document, tokens, and organizations under the admin token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx2
import pytest

from apimcp.control.models import ApiToken, utcnow
from tests.control.api_harness import Api, created, import_echo, ok, problem

RESOURCE_PATHS = {
    "/api/v1/services": {"get", "post"},
    "/api/v1/services/{service_id}": {"get", "delete"},
    "/api/v1/services/{service_id}/artifacts": {"get", "post"},
    "/api/v1/artifacts/{artifact_id}": {"delete"},
    "/api/v1/artifact-schemas/{kind}": {"get"},
    "/api/v1/plans": {"get", "post"},
    "/api/v1/plans/{plan_id}": {"get", "patch", "delete"},
    "/api/v1/plans/{plan_id}/api-key": {"post"},
    "/api/v1/plans/{plan_id}/duplicate": {"post"},
    "/api/v1/secrets": {"get", "post"},
    "/api/v1/secrets/{secret_id}": {"get", "delete"},
    "/api/v1/secrets/{secret_id}/values": {"put"},
    "/api/v1/gateway-groups": {"get", "post"},
    "/api/v1/gateway-groups/{group_id}": {"get", "patch", "delete"},
    "/api/v1/expositions": {"get", "post"},
    "/api/v1/expositions/{exposition_id}": {"get", "patch", "delete"},
    "/api/v1/expositions/{exposition_id}/duplicate": {"post"},
    "/api/v1/gateways": {"get"},
    "/api/v1/tokens": {"get", "post"},
    "/api/v1/tokens/{token_id}": {"delete"},
    "/api/v1/gateway-keys": {"get", "post"},
    "/api/v1/gateway-keys/{key_id}": {"delete"},
    "/api/v1/organization": {"get"},
    "/api/v1/organizations": {"post"},
    "/api/v1/gateway/snapshot": {"post"},
    "/api/v1/gateway/changes": {"get"},
    "/api/v1/gateway/audit": {"post"},
    "/api/v1/gateway/upstream-changed": {"post"},
    "/api/v1/gateway/upstreams": {"post"},
}


def test_openapi_document_lists_every_resource(api: Api) -> None:
    response = httpx2.get(f"{api.base}/api/v1/openapi.json")  # no token needed to read the contract
    document = ok(response)
    assert document["openapi"].startswith("3.")
    assert document["info"]["title"] == "apimcp control plane"
    for path, methods in RESOURCE_PATHS.items():
        assert path in document["paths"], path
        assert set(document["paths"][path]) >= methods, (path, set(document["paths"][path]))
    schemas = document["components"]["schemas"]
    assert "values" in schemas["SecretInput"]["properties"]
    assert "values" not in schemas["SecretView"]["properties"]
    assert "token" not in schemas["TokenView"]["properties"]
    assert "api_key" not in schemas["PlanView"]["properties"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer"}, {"Authorization": "token abc"}],
    ids=["none", "basic", "empty-bearer", "other-scheme"],
)
def test_a_request_without_a_bearer_token_is_unauthorized(api: Api, headers: dict[str, str]) -> None:
    api.org("acme")
    response = httpx2.get(f"{api.base}/api/v1/services", headers=headers)
    body = problem(response, 401)
    assert body["title"] == "Unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


def test_an_unknown_token_is_unauthorized(api: Api) -> None:
    acme = api.org("acme")
    response = api.client("apimcp_user_" + "x" * 43).get("/services")
    assert problem(response, 401)["detail"] == "unknown or revoked token"
    assert response.headers["www-authenticate"] == "Bearer"
    # a real token with a character changed is just as unknown
    response = api.client(acme.user_token[:-1] + ("A" if acme.user_token[-1] != "A" else "B")).get("/services")
    problem(response, 401)


def test_a_revoked_token_stops_working_at_once(api: Api) -> None:
    acme = api.org("acme")
    issued = created(acme.user.post("/tokens", json={"name": "laptop"}))
    assert issued["kind"] == "user"
    assert issued["token"].startswith("apimcp_user_")
    assert issued["token"].startswith(issued["prefix"])
    laptop = api.client(issued["token"])
    assert ok(laptop.get("/organization"))["name"] == "acme"

    revoked = ok(acme.user.delete(f"/tokens/{issued['id']}"))
    assert revoked["id"] == issued["id"]
    assert revoked["revoked_at"] is not None
    assert "token" not in revoked

    response = laptop.get("/organization")
    assert problem(response, 401)["detail"] == "unknown or revoked token"
    assert response.headers["www-authenticate"] == "Bearer"
    listed = {t["id"]: t for t in ok(acme.user.get("/tokens"))}
    assert listed[issued["id"]]["revoked_at"] is not None
    # the token that revoked it still works; revoking twice keeps the first revocation time
    again = ok(acme.user.delete(f"/tokens/{issued['id']}"))
    assert again["revoked_at"] == revoked["revoked_at"]


def test_a_token_can_revoke_itself(api: Api) -> None:
    acme = api.org("acme")
    me = next(t for t in ok(acme.user.get("/tokens")) if t["name"] == "tester")
    ok(acme.user.delete(f"/tokens/{me['id']}"))
    problem(acme.user.get("/tokens"), 401)


def test_an_expired_token_is_unauthorized(api: Api) -> None:
    acme = api.org("acme")
    issued = created(acme.user.post("/tokens", json={"name": "temp", "valid_days": 2}))
    expires = datetime.fromisoformat(issued["expires_at"])
    assert abs(expires - (datetime.now(UTC) + timedelta(days=2))) < timedelta(minutes=1)
    temp = api.client(issued["token"])
    assert ok(temp.get("/organization"))["name"] == "acme"

    with api.plane.session() as session:
        record = session.get(ApiToken, issued["id"])
        assert record is not None
        record.expires_at = utcnow() - timedelta(seconds=1)

    response = temp.get("/organization")
    assert "expired" in problem(response, 401)["detail"]
    assert response.headers["www-authenticate"] == "Bearer"
    assert ok(acme.user.get("/organization"))["name"] == "acme"  # other tokens are unaffected


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/services", None),
        ("GET", "/organization", None),
        ("GET", "/tokens", None),
        ("POST", "/tokens", {"name": "escalate", "kind": "user"}),
        ("POST", "/secrets", {"name": "s", "kind": "bearer", "values": {"token": "t"}}),
        ("POST", "/gateway-groups", {"name": "g"}),
        ("GET", "/gateways", None),
    ],
)
def test_a_gateway_token_is_refused_on_user_routes(api: Api, method: str, path: str, body: object) -> None:
    acme = api.org("acme")
    response = acme.gateway.request(method, path, json=body)
    assert problem(response, 401)["detail"] == "a gateway token cannot be used here"
    assert sorted(t["name"] for t in ok(acme.user.get("/tokens"))) == ["edge", "tester"]
    assert [g["name"] for g in ok(acme.user.get("/gateway-groups"))] == ["default"]
    assert ok(acme.user.get("/secrets")) == []


def test_a_user_token_is_refused_on_gateway_routes(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    registration = {"name": "sneaky", "public_key": acme.gateway_key.public.text}
    for client, kind in ((acme.user, "an admin"), (member, "a user")):
        response = client.post("/gateway/snapshot", json=registration)
        assert problem(response, 401)["detail"] == f"{kind} token cannot be used here"
        response = client.get("/gateway/changes", params={"since": 0})
        assert problem(response, 401)["detail"] == f"{kind} token cannot be used here"
        for path, body in (("/gateway/upstreams", {"name": "sneaky", "upstreams": {}}),
                           ("/gateway/upstream-changed", {"service": "s"})):  # fmt: skip
            assert problem(client.post(path, json=body), 401)["detail"] == f"{kind} token cannot be used here"
    assert ok(acme.user.get("/gateways")) == []  # the refused snapshot registered nothing
    assert acme.snapshot("real")["expositions"] == []


def test_issued_tokens_are_shown_once(api: Api) -> None:
    acme = api.org("acme")
    issued = created(acme.user.post("/tokens", json={"name": "edge-2", "kind": "gateway"}))
    assert issued["token"].startswith("apimcp_gateway_")
    assert issued["expires_at"] is None
    listing = acme.user.get("/tokens")
    assert issued["token"] not in listing.text
    assert acme.user_token not in listing.text
    assert all("token" not in t for t in listing.json())
    assert {t["name"]: t["kind"] for t in listing.json()} == {"tester": "admin", "edge": "gateway", "edge-2": "gateway"}
    registration = {"name": "gw", "public_key": acme.gateway_key.public.text}
    snapshot = ok(api.client(issued["token"]).post("/gateway/snapshot", json=registration))
    assert snapshot["expositions"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "kind": "root"}, "kind"),
        ({"name": "x", "valid_days": 0}, "valid_days"),
        ({"name": "x", "valid_days": 3651}, "valid_days"),
        ({}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x", "scope": "all"}, "scope"),
    ],
)
def test_token_requests_are_validated(api: Api, body: dict[str, object], field: str) -> None:
    acme = api.org("acme")
    problem(acme.user.post("/tokens", json=body), 422, field)
    assert sorted(t["name"] for t in ok(acme.user.get("/tokens"))) == ["edge", "tester"]


# --- organizations ----------------------------------------------------------------------------------


def test_creating_an_organization_needs_the_admin_token_configured(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APIMCP_ADMIN_TOKEN", raising=False)
    acme = api.org("acme")
    for client in (api.client(), api.client("anything"), acme.user):
        body = problem(client.post("/organizations", json={"name": "beta"}), 403)
        assert "APIMCP_ADMIN_TOKEN" in body["detail"]
    assert problem(api.client("anything").post("/organizations", json={"name": "beta"}), 403)["title"] == "Forbidden"


def test_creating_an_organization_refuses_other_tokens(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIMCP_ADMIN_TOKEN", "the-admin-token-0123456789")
    acme = api.org("acme")
    for client in (api.client(), api.client("the-admin-token"), api.client("the-admin-token-01234567890"), acme.user):
        response = client.post("/organizations", json={"name": "beta"})
        problem(response, 401)
        assert response.headers["www-authenticate"] == "Bearer"
    # nothing was created: the name is still free
    admin = api.client("the-admin-token-0123456789")
    assert created(admin.post("/organizations", json={"name": "beta"}))["name"] == "beta"


def test_a_new_organization_comes_with_a_working_token(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APIMCP_ADMIN_TOKEN", "the-admin-token-0123456789")
    admin = api.client("the-admin-token-0123456789")
    organization = created(admin.post("/organizations", json={"name": "beta"}))
    assert organization["name"] == "beta"
    assert organization["token"].startswith("apimcp_admin_")

    owner = api.client(organization["token"])
    me = ok(owner.get("/organization"))
    assert me["id"] == organization["id"]
    assert me["name"] == "beta"
    assert [(t["name"], t["kind"]) for t in ok(owner.get("/tokens"))] == [("owner", "admin")]
    assert [g["name"] for g in ok(owner.get("/gateway-groups"))] == ["default"]
    assert ok(owner.get("/services")) == []
    # the admin token is not a user token of any organization
    problem(admin.get("/organization"), 401)


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"name": "acme"}, 409, "name"),
        ({"name": "Not Valid"}, 422, "name"),
        ({"name": ""}, 422, "name"),
        ({}, 422, "name"),
        ({"name": "ok", "plan": "gold"}, 422, "plan"),
    ],
)
def test_organization_requests_are_validated(
    api: Api, monkeypatch: pytest.MonkeyPatch, body: dict[str, object], status: int, field: str
) -> None:
    monkeypatch.setenv("APIMCP_ADMIN_TOKEN", "the-admin-token-0123456789")
    api.org("acme")
    problem(api.client("the-admin-token-0123456789").post("/organizations", json=body), status, field)


# --- roles -------------------------------------------------------------------------------------------------


def test_a_user_token_can_no_longer_mint_a_gateway_or_admin_token(api: Api) -> None:
    """The finding: any user token could mint a gateway (or admin) token. Tokens are an admin's now (a user token
    acts as an editor)."""
    acme = api.org("acme")
    member = api.member(acme)
    for kind in ("gateway", "admin", "user", "viewer"):
        body = problem(member.post("/tokens", json={"name": f"sneaky-{kind}", "kind": kind}), 403)
        needs = (
            "POST /api/v1/tokens needs the admin role in organization acme; this is a user token, with the editor role"
        )
        assert body["detail"] == needs
    for kind in ("gateway", "admin", "user", "viewer"):
        issued = created(acme.user.post("/tokens", json={"name": f"by-admin-{kind}", "kind": kind}))
        assert issued["token"].startswith(f"apimcp_{kind}_")
        assert issued["service_account"] == f"by-admin-{kind}"
        assert issued["user_id"] is None
    names = {t["name"] for t in ok(acme.user.get("/tokens"))}
    assert not any(name.startswith("sneaky-") for name in names)


def test_only_admins_revoke_tokens(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    tokens = {t["name"]: t for t in ok(acme.user.get("/tokens"))}
    for name in ("tester", "edge", "member"):
        body = problem(member.delete(f"/tokens/{tokens[name]['id']}"), 403)
        assert "DELETE /api/v1/tokens/{token_id} needs the admin role" in body["detail"]
    assert ok(acme.user.get("/organization"))["name"] == "acme"  # still valid
    assert ok(acme.user.delete(f"/tokens/{tokens['edge']['id']}"))["revoked_at"] is not None
    assert ok(acme.user.delete(f"/tokens/{tokens['tester']['id']}"))["revoked_at"] is not None


def test_users_do_everything_else(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    service = import_echo(member)
    plan = created(member.post("/plans", json={"name": "p", "service_id": service["id"]}))
    created(member.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))
    created(member.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": "t"}}))
    assert [k["name"] for k in ok(member.get("/gateway-keys"))] == ["edge-key"]
