"""Plans carrying several backend secrets: checked together, sent together, in use as long as one plan has them."""

from __future__ import annotations

from typing import Any

import pytest

from apimcp.control import snapshot
from apimcp.control.domain import expositions, plans, secrets
from apimcp.control.errors import Conflict, Invalid, NotFound
from apimcp.control.models import Plan
from apimcp.control.plane import ControlPlane
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import open_exposition
from tests.control.api_harness import Api, created, import_echo, ok, problem
from tests.control.factories import import_echo as import_echo_service
from tests.control.factories import new_org
from tests.support.grpc_certs import make_pki

GATEWAY_KEY = GatewayKey.generate()


@pytest.fixture
def acme(plane: ControlPlane) -> str:
    return new_org(plane, "acme")


@pytest.fixture
def echo(plane: ControlPlane, acme: str) -> str:
    return import_echo_service(plane, acme).service.id


def _secret(plane: ControlPlane, organization_id: str, label: str, kind: str = "api_key", **fields: Any) -> str:
    """A secret named `label`; an API key's header is `label` too unless `name` says otherwise."""
    values = {"bearer": {"token": "t"}, "basic": {"password": "p"}, "api_key": {"value": f"{label}-value"},
              "oauth_client_credentials": {"client_secret": "s"}}[kind]  # fmt: skip
    if kind == "api_key":
        fields.setdefault("name", label)
    with plane.session() as session:
        return secrets.create(session, plane.keys, organization_id, label, kind, fields, values).id


def _key(header: str, value: str) -> dict[str, Any]:
    return {"kind": "api_key", "fields": {"name": header, "location": "header"}, "values": {"value": value}}


def _create(plane: ControlPlane, organization_id: str, service_id: str, **values: Any) -> Plan:
    with plane.session() as session:
        plan, _ = plans.create(session, organization_id, service_id, values.pop("name", "main"), values)
        return plan


def _invalid(plane: ControlPlane, call: Any, *args: Any) -> Invalid:
    with pytest.raises(Invalid) as caught, plane.session() as session:
        call(session, *args)
    return caught.value


def test_an_operation_whose_security_requires_two_schemes_at_once_is_given_both_credentials(
    plane: ControlPlane, acme: str, echo: str
) -> None:
    """Finding: a plan had one secret; it now has a list, all sent on every call, in order."""
    key = _secret(plane, acme, "X-Api-Key")
    client = _secret(plane, acme, "X-Client-Id")
    plan = _create(plane, acme, echo, secret_ids=[key, client])
    assert (plan.secret_ids, plan.secret_id) == ([key, client], key)
    with plane.session() as session:
        expositions.create(session, acme, plan.id, name="echo")
        built = snapshot.build(session, plane.keys, organization_id=acme, labels={}, recipient=GATEWAY_KEY.public)
    [exposition] = built["expositions"]
    assert open_exposition(exposition, GATEWAY_KEY)["members"][0]["credentials"] == [
        _key("X-Api-Key", "X-Api-Key-value"),
        _key("X-Client-Id", "X-Client-Id-value"),
    ]


def test_secret_id_still_sets_one_secret_and_none_clears_them_all(plane: ControlPlane, acme: str, echo: str) -> None:
    key, client, other = (_secret(plane, acme, n) for n in ("X-Api-Key", "X-Client-Id", "X-Other"))
    plan = _create(plane, acme, echo, secret_id=key)
    with plane.session() as session:
        assert plans.update(session, acme, plan.id, {"secret_ids": [client, key]})[0].secret_ids == [client, key]
        assert plans.update(session, acme, plan.id, {"secret_ids": [key, client, other]})[0].secret_ids == [
            key, client, other
        ]  # fmt: skip
        assert plans.update(session, acme, plan.id, {"secret_id": other})[0].secret_ids == [other]
        assert plans.update(session, acme, plan.id, {"secret_id": None})[0].secret_ids == []
        assert plans.update(session, acme, plan.id, {"secret_ids": [key]})[0].secret_ids == [key]
        assert plans.update(session, acme, plan.id, {"secret_ids": None})[0].secret_ids == []


def test_a_copy_of_a_plan_has_the_same_secrets(plane: ControlPlane, acme: str, echo: str) -> None:
    key, client = _secret(plane, acme, "X-Api-Key"), _secret(plane, acme, "X-Client-Id")
    plan = _create(plane, acme, echo, secret_ids=[key, client])
    with plane.session() as session:
        copy, _ = plans.duplicate(session, acme, plan.id, "copy")
        assert copy.secret_ids == [key, client]


@pytest.mark.parametrize(
    ("first", "second", "clash"),
    [
        (("X-Key", "api_key", {"name": "X-Key"}), ("x-key", "api_key", {"name": "x-key"}), "the header 'x-key'"),
        (("token", "bearer", {}), ("pass", "basic", {"username": "u"}), "the header 'Authorization'"),
        (("token", "bearer", {}), ("auth", "api_key", {"name": "authorization"}), "the header 'authorization'"),
        (("token", "bearer", {}),
         ("oauth", "oauth_client_credentials", {"token_url": "https://a/t", "client_id": "c"}),
         "the header 'Authorization'"),
        (("c1", "api_key", {"name": "sid", "location": "cookie"}),
         ("c2", "api_key", {"name": "sid", "location": "cookie"}), "the cookie 'sid'"),
        (("q1", "api_key", {"name": "key", "location": "query"}),
         ("q2", "api_key", {"name": "key", "location": "query"}), "the query 'key'"),
    ],
)  # fmt: skip
def test_two_secrets_that_would_set_the_same_name_are_refused_at_plan_time(
    plane: ControlPlane,
    acme: str,
    echo: str,
    first: tuple[str, str, dict[str, Any]],
    second: tuple[str, str, dict[str, Any]],
    clash: str,
) -> None:
    ids = [_secret(plane, acme, name, kind, **fields) for name, kind, fields in (first, second)]
    refused = _invalid(plane, plans.create, acme, echo, "main", {"secret_ids": ids})
    assert refused.field == "secret_ids"
    assert str(refused) == (
        f"secret {first[0]!r} and secret {second[0]!r} would both set {clash}: a request carries only one"
    )


def test_a_query_key_and_a_header_of_the_same_name_go_together(plane: ControlPlane, acme: str, echo: str) -> None:
    header = _secret(plane, acme, "h", name="key")
    query = _secret(plane, acme, "q", location="query", name="key")
    cookie = _secret(plane, acme, "c", location="cookie", name="key")
    assert len(_create(plane, acme, echo, secret_ids=[header, query, cookie]).secret_ids) == 3


def test_each_secret_of_the_list_is_checked_and_named(plane: ControlPlane, acme: str, echo: str) -> None:
    key = _secret(plane, acme, "X-Api-Key")
    with plane.session() as session:
        tls = secrets.create(session, plane.keys, acme, "tls", "tls", {"ca": _ca()}, {}).id
    refused = _invalid(plane, plans.create, acme, echo, "main", {"secret_ids": [key, tls]})
    assert (refused.field, str(refused)) == ("secret_ids[1]", "a tls secret goes in tls_secret_id, not secret_ids")
    refused = _invalid(plane, plans.create, acme, echo, "main", {"secret_ids": [key, key]})
    assert (refused.field, str(refused)) == ("secret_ids[1]", f"secret {key} is given twice")
    refused = _invalid(plane, plans.create, acme, echo, "main", {"secret_ids": [key], "secret_id": key})
    assert refused.field == "secret_ids"
    refused = _invalid(plane, plans.create, acme, echo, "main", {"secret_ids": key})
    assert (refused.field, str(refused)) == ("secret_ids", "secret_ids is a list of secret ids")
    globex = new_org(plane, "globex")
    theirs = _secret(plane, globex, "X-Theirs")
    with pytest.raises(NotFound), plane.session() as session:
        plans.create(session, acme, echo, "main", {"secret_ids": [key, theirs]})


def test_deleting_a_secret_used_by_plans_is_refused_for_every_secret_of_the_list(
    plane: ControlPlane, acme: str, echo: str
) -> None:
    key, client = _secret(plane, acme, "X-Api-Key"), _secret(plane, acme, "X-Client-Id")
    plan = _create(plane, acme, echo, secret_ids=[key, client])
    _create(plane, acme, echo, name="other", secret_ids=[client])
    for secret_id, users in ((key, "main"), (client, "main, other")):
        with pytest.raises(Conflict) as caught, plane.session() as session:
            secrets.delete(session, acme, secret_id)
        assert str(caught.value).endswith(f"is used by plans {users}")
    with plane.session() as session:
        plans.update(session, acme, plan.id, {"secret_ids": [client]})
        secrets.delete(session, acme, key)
        plans.delete(session, acme, plan.id)
    with pytest.raises(Conflict), plane.session() as session:
        secrets.delete(session, acme, client)  # still used by "other"


def _ca() -> str:
    return make_pki().ca.cert_pem.decode()


def test_plans_take_and_show_secret_ids_over_the_api(api: Api) -> None:
    user = api.org("acme").user
    service = import_echo(user)
    key = created(user.post("/secrets", json={"name": "k", "kind": "api_key", "fields": {"name": "X-Api-Key"},
                                              "values": {"value": "v1"}}))  # fmt: skip
    client = created(user.post("/secrets", json={"name": "c", "kind": "api_key", "fields": {"name": "X-Client-Id"},
                                                 "values": {"value": "v2"}}))  # fmt: skip
    body = {"service_id": service["id"], "name": "main", "secret_ids": [key["id"], client["id"]]}
    plan = created(user.post("/plans", json=body))
    assert (plan["secret_ids"], plan["secret_id"]) == ([key["id"], client["id"]], key["id"])
    assert ok(user.patch(f"/plans/{plan['id']}", json={"secret_id": client["id"]}))["secret_ids"] == [client["id"]]
    clash = {"service_id": service["id"], "name": "twice", "secret_ids": [key["id"], key["id"]]}
    assert "given twice" in problem(user.post("/plans", json=clash), 422, "secret_ids[1]")["detail"]
    assert "is used by plans main" in problem(user.delete(f"/secrets/{client['id']}"), 409)["detail"]
