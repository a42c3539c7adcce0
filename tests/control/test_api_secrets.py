"""Secret values go in and never come out of the API (or its logs); only gateways receive them."""

from __future__ import annotations

import logging
import secrets as random
from datetime import datetime
from typing import Any

import httpx2
import orjson
import pytest

from tests.control.api_harness import Api, Org, created, import_echo, ok, problem

SECRET_VIEW_FIELDS = {"id", "name", "kind", "description", "fields", "key_id", "created_at", "updated_at"}


def _capture_every_log(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every logger, at DEBUG, into caplog (including those that do not propagate, like uvicorn's)."""
    caplog.set_level(logging.DEBUG)
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            caplog.set_level(logging.DEBUG, logger=name)
            monkeypatch.setattr(logger, "propagate", True)
            monkeypatch.setattr(logger, "disabled", False)


def _value(label: str) -> str:
    return f"{label}-{random.token_hex(12)}"


def _everything_readable(api: Api, org: Org) -> dict[str, httpx2.Response]:
    """Every GET a user can make, by path."""
    user = org.user
    paths = ["/organization", "/services", "/plans", "/secrets", "/gateway-groups", "/expositions", "/tokens"]
    paths += ["/gateways"]
    responses = {path: user.get(path) for path in paths}
    for service in responses["/services"].json():
        for path in (f"/services/{service['id']}", f"/services/{service['id']}/artifacts"):
            responses[path] = user.get(path)
        responses[f"/plans?service_id={service['id']}"] = user.get("/plans", params={"service_id": service["id"]})
    for kind in ("plans", "secrets", "gateway-groups", "expositions"):
        for item in responses[f"/{kind}"].json():
            responses[f"/{kind}/{item['id']}"] = user.get(f"/{kind}/{item['id']}")
    responses["/api/v1/openapi.json"] = httpx2.get(f"{api.base}/api/v1/openapi.json")
    responses["/api/docs"] = httpx2.get(f"{api.base}/api/docs")
    for path, response in responses.items():
        assert response.status_code == 200, (path, response.text)
    return responses


def test_secret_values_never_appear_in_responses_or_logs(
    api: Api, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _capture_every_log(caplog, monkeypatch)
    acme = api.org("acme")
    user = acme.user
    values = {
        "bearer": _value("bearer"),
        "basic": _value("basic"),
        "api_key": _value("apikey"),
        "oauth": _value("oauth"),
        "rotated": _value("rotated"),
        "refused": _value("refused"),
    }
    bodies: list[str] = []

    def keep(response: httpx2.Response) -> Any:
        bodies.append(response.text)
        return response.json()

    service = import_echo(user)
    bearer = keep(user.post("/secrets", json={"name": "b", "kind": "bearer", "values": {"token": values["bearer"]}}))
    keep(
        user.post(
            "/secrets",
            json={"name": "u", "kind": "basic", "fields": {"username": "ann"}, "values": {"password": values["basic"]}},
        )
    )
    keep(
        user.post(
            "/secrets",
            json={"name": "k", "kind": "api_key", "fields": {"name": "X-Key"}, "values": {"value": values["api_key"]}},
        )
    )
    oauth = keep(
        user.post(
            "/secrets",
            json={
                "name": "o",
                "kind": "oauth_client_credentials",
                "description": "the identity provider",
                "fields": {"token_url": "https://idp.example.com/token", "client_id": "apimcp", "scopes": "read write"},
                "values": {"client_secret": values["oauth"]},
            },
        )
    )
    assert oauth["fields"] == {
        "token_url": "https://idp.example.com/token",
        "client_id": "apimcp",
        "scopes": ["read", "write"],
    }
    assert set(oauth) == SECRET_VIEW_FIELDS
    # refused requests do not echo the values either
    refusals = [
        user.post("/secrets", json={"name": "b", "kind": "bearer", "values": {"token": values["refused"]}}),
        user.post("/secrets", json={"name": "x", "kind": "bearer", "values": {"token": [values["refused"]]}}),
        user.post("/secrets", json={"name": "x", "kind": "bearer", "values": {"tok": values["refused"]}}),
        user.post("/secrets", json={"name": "x", "kind": "nope", "values": {"token": values["refused"]}}),
        user.put(f"/secrets/{bearer['id']}/values", json={"values": {"token": 1, "x": values["refused"]}}),
    ]
    assert [r.status_code for r in refusals] == [409, 422, 422, 422, 422]
    bodies += [r.text for r in refusals]

    plan = keep(user.post("/plans", json={"service_id": service["id"], "name": "main", "secret_id": bearer["id"]}))
    assert plan["secret_id"] == bearer["id"]
    other = keep(user.post("/plans", json={"service_id": service["id"], "name": "other"}))
    keep(user.patch(f"/plans/{other['id']}", json={"secret_id": oauth["id"]}))
    keep(user.post(f"/plans/{plan['id']}/duplicate", json={"name": "copy"}))
    keep(user.post("/expositions", json={"plan_id": plan["id"], "name": "shop"}))
    keep(user.post("/expositions", json={"plan_id": other["id"]}))
    keep(user.post("/tokens", json={"name": "ci"}))

    # the gateway does receive the values: they are in the system, so their absence below means something;
    # they travel sealed to its key, so the snapshot's bytes are among the bodies that must not hold them
    bodies.append(acme.snapshot_response().text)
    opened = orjson.dumps(acme.snapshot()).decode()
    assert values["bearer"] in opened
    assert values["oauth"] in opened

    rotated = keep(user.put(f"/secrets/{bearer['id']}/values", json={"values": {"token": values["rotated"]}}))
    assert set(rotated) == SECRET_VIEW_FIELDS
    bodies.append(acme.snapshot_response().text)
    assert values["rotated"] in orjson.dumps(acme.snapshot()).decode()

    bodies += [response.text for response in _everything_readable(api, acme).values()]
    assert len(bodies) > 30
    for label, value in values.items():
        for body in bodies:
            assert value not in body, label
    assert any(record.name.startswith("sqlalchemy.engine") for record in caplog.records)  # the capture works
    for label, value in values.items():
        assert value not in caplog.text, label
        for record in caplog.records:
            assert value not in record.getMessage(), (label, record.name)


def test_rotation_replaces_the_values_and_returns_metadata_only(api: Api) -> None:
    acme = api.org("acme")
    user = acme.user
    old, new = _value("old"), _value("new")
    secret = created(
        user.post(
            "/secrets",
            json={
                "name": "k",
                "kind": "api_key",
                "description": "backend key",
                "fields": {"name": "X-Key", "location": "query"},
                "values": {"value": old},
            },
        )
    )
    assert secret["fields"] == {"name": "X-Key", "location": "query"}
    service = import_echo(user)
    plan = created(user.post("/plans", json={"service_id": service["id"], "name": "main", "secret_id": secret["id"]}))
    created(user.post("/expositions", json={"plan_id": plan["id"]}))

    def credentials() -> Any:
        snapshot = acme.snapshot("gw")
        return snapshot["expositions"][0]["members"][0]["credentials"]

    expected = [{"kind": "api_key", "fields": {"name": "X-Key", "location": "query"}, "values": {"value": old}}]
    assert credentials() == expected

    response = user.put(f"/secrets/{secret['id']}/values", json={"values": {"value": new}})
    rotated = ok(response)
    assert set(rotated) == SECRET_VIEW_FIELDS
    assert old not in response.text
    assert new not in response.text
    for key in ("id", "name", "kind", "description", "fields", "created_at"):
        assert rotated[key] == secret[key], key
    assert datetime.fromisoformat(rotated["updated_at"]) > datetime.fromisoformat(secret["updated_at"])
    assert ok(user.get(f"/secrets/{secret['id']}")) == rotated
    assert credentials()[0]["values"] == {"value": new}

    # the new values are checked like the first ones, and a refusal keeps the current values
    problem(user.put(f"/secrets/{secret['id']}/values", json={"values": {}}), 422, "values.value")
    problem(user.put(f"/secrets/{secret['id']}/values", json={"values": {"value": "v", "x": "y"}}), 422, "values.x")
    problem(user.put(f"/secrets/{secret['id']}/values", json={"value": "v"}), 422)
    assert credentials()[0]["values"] == {"value": new}
    problem(user.put("/secrets/0000000000000/values", json={"values": {"value": "v"}}), 404)


def test_rotation_wakes_waiting_gateways(api: Api) -> None:
    acme = api.org("acme")
    secret = created(acme.user.post("/secrets", json={"name": "b", "kind": "bearer", "values": {"token": "one"}}))
    service = import_echo(acme.user)
    body = {"service_id": service["id"], "name": "main", "secret_id": secret["id"]}
    plan = created(acme.user.post("/plans", json=body))
    created(acme.user.post("/expositions", json={"plan_id": plan["id"]}))
    before = acme.snapshot("gw")["revision"]
    ok(acme.user.put(f"/secrets/{secret['id']}/values", json={"values": {"token": "two"}}))
    changed = ok(acme.gateway.get("/gateway/changes", params={"since": before}, timeout=30))
    assert changed["revision"] > before


def test_a_secret_value_above_its_size_limit_is_refused_naming_the_field(api: Api) -> None:
    """The finding: a 300 MB secret value was accepted. Token-like values stop at 16 KiB, PEM texts at 256 KiB."""
    acme = api.org("acme")
    big_token = {"name": "big", "kind": "bearer", "values": {"token": "t" * (16 * 1024 + 1)}}
    body = problem(acme.user.post("/secrets", json=big_token), 422, "values.token")
    assert body["detail"] == "values.token has 16385 bytes; a secret value may have at most 16384"
    big_name = {"name": "hdr", "kind": "api_key", "fields": {"name": "X" * 20_000}, "values": {"value": "v"}}
    problem(acme.user.post("/secrets", json=big_name), 422, "fields.name")
    pem = "-----BEGIN PRIVATE KEY-----\n" + "A" * (256 * 1024) + "\n-----END PRIVATE KEY-----\n"
    big_pem = {"name": "tls", "kind": "tls", "values": {"certificate": pem, "private_key": pem}}
    assert "a PEM text may have at most 262144" in problem(acme.user.post("/secrets", json=big_pem), 422)["detail"]
    assert ok(acme.user.get("/secrets")) == []

    fits = created(acme.user.post("/secrets", json={**big_token, "values": {"token": "t" * 16 * 1024}}))
    rotation = {"values": {"token": "t" * (16 * 1024 + 1)}}
    problem(acme.user.put(f"/secrets/{fits['id']}/values", json=rotation), 422, "values.token")


def test_a_public_field_is_a_single_value_however_deep_a_body_nests(api: Api) -> None:
    """The finding: JSON nested 300 levels in a public field was kept, then could not be written back (a 500)."""
    acme = api.org("acme")
    deep: object = "x"
    for _ in range(300):
        deep = {"a": deep}
    fields: dict[str, object] = {"token_url": "https://idp.example.com/token", "client_id": "apimcp", "audience": deep}
    oauth: dict[str, object] = {"name": "cc", "kind": "oauth_client_credentials", "fields": fields}
    oauth["values"] = {"client_secret": "s"}
    body = problem(acme.user.post("/secrets", json=oauth), 422, "fields.audience")
    assert body["detail"] == "fields.audience is a single value (a text), not a list or an object"
    nested_scopes = {**oauth, "fields": {**fields, "audience": "api", "scopes": [["read"]]}}
    assert problem(acme.user.post("/secrets", json=nested_scopes), 422, "fields.scopes")["detail"] == (
        "scopes are a list of strings"
    )
    assert ok(acme.user.get("/secrets")) == []
    kept = created(acme.user.post("/secrets", json={**oauth, "fields": {**fields, "audience": "api",
                                                                        "scopes": ["read", "write"]}}))  # fmt: skip
    assert kept["fields"]["scopes"] == ["read", "write"]


def test_a_user_oauth_secret_either_names_its_endpoints_or_discovers_an_mcp_server_s(api: Api) -> None:
    acme = api.org("acme")
    discovering = {"name": "notes-account", "kind": "user_oauth", "fields": {"discover": True, "scopes": "mcp:read"}}
    made = created(acme.user.post("/secrets", json=discovering))
    assert made["fields"] == {"discover": True, "scopes": ["mcp:read"]}
    half = {"name": "half", "kind": "user_oauth", "fields": {"authorization_url": "https://as/auth"}}
    assert (
        "user_oauth secrets need token_url, or discover: true"
        in problem(acme.user.post("/secrets", json=half), 422, "fields.token_url")["detail"]
    )
    both = {"name": "both", "kind": "user_oauth", "fields": {"discover": True, "token_url": "https://as/token"}}
    problem(acme.user.post("/secrets", json=both), 422, "fields.token_url")
    with_secret = {"name": "ws", "kind": "user_oauth", "fields": {"discover": True}, "values": {"client_secret": "x"}}
    problem(acme.user.post("/secrets", json=with_secret), 422, "values.client_secret")  # the server names the AS
    not_a_bool = {"name": "nab", "kind": "user_oauth", "fields": {"discover": "yes"}}
    problem(acme.user.post("/secrets", json=not_a_bool), 422, "fields.discover")
    assert acme.user.delete(f"/secrets/{made['id']}").status_code == 204


def test_a_discovering_user_oauth_secret_goes_with_mcp_services_only(api: Api) -> None:
    acme = api.org("acme-discover")
    service = import_echo(acme.user)
    secret = created(acme.user.post("/secrets", json={"name": "d", "kind": "user_oauth", "fields": {"discover": True}}))
    refused = acme.user.post("/plans", json={"name": "p", "service_id": service["id"], "secret_ids": [secret["id"]]})
    assert "discovers an MCP server's authorization server" in problem(refused, 422, "secret_ids[0]")["detail"]
