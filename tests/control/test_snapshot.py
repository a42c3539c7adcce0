"""Snapshots: what a gateway of an organization, with its labels, is sent (SQLite and PostgreSQL)."""

from __future__ import annotations

from typing import Any

import orjson

from apimcp.catalog.codec import decode_service
from apimcp.control import changes, snapshot
from apimcp.control.domain import expositions, groups, plans, secrets, services
from apimcp.control.plane import ControlPlane
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import open_exposition
from tests.control.factories import import_echo, import_spec, new_org, prompts, sha256, spec

GATEWAY_KEY = GatewayKey.generate()


def _sealed(plane: ControlPlane, organization_id: str | None, labels: dict[str, str] | None = None,
            known: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    with plane.session() as session:
        return snapshot.build(
            session,
            plane.keys,
            organization_id=organization_id,
            labels=labels or {},
            recipient=GATEWAY_KEY.public,
            known_services=known,
        )


def _build(plane: ControlPlane, organization_id: str | None, labels: dict[str, str] | None = None,
           known: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    """The snapshot as the gateway holding GATEWAY_KEY reads it (secrets opened)."""
    built = _sealed(plane, organization_id, labels, known)
    return {**built, "expositions": [open_exposition(e, GATEWAY_KEY) for e in built["expositions"]]}


def _names(built: dict[str, Any]) -> list[str | None]:
    return sorted((e["name"] for e in built["expositions"]), key=str)


def test_a_snapshot_carries_the_exposition_its_plan_and_its_service(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    service = import_echo(plane, acme).service
    with plane.session() as session:
        secret = secrets.create(session, plane.keys, acme, "token", "bearer", {}, {"token": "tok-123"})
        plan, _ = plans.create(
            session,
            acme,
            service.id,
            "main",
            {
                "backend_endpoint": "https://echo.example/v1",
                "backend_timeout_ms": 2_000,
                "include": ["get_*"],
                "exclude": ["getStatus"],
                "secret_id": secret.id,
                "cache": {"tools/list": {"ttl_ms": 1000, "scope": "public"}},
                "tool_prefix": "echo_",
                "output_schemas": False,
            },
        )
        exposition = expositions.create(session, acme, plan.id, name="echo")
    built = _build(plane, acme)
    with plane.session() as session:
        assert built["revision"] == changes.latest(session, acme) > 0
    assert built["format"] == snapshot.FORMAT
    assert list(built["services"]) == [service.compiled_hash]
    compiled = built["services"][service.compiled_hash]
    assert sha256(compiled) == service.compiled_hash
    assert decode_service(compiled).name == "Echo API"
    [entry] = built["expositions"]
    assert entry["id"] == exposition.id
    assert entry["name"] == "echo"
    assert entry["organization"] == "acme"
    assert entry["title"] == "Echo API 2.1"
    assert entry["instructions"] == service.description
    assert entry["cache"] == {"tools/list": {"ttl_ms": 1000, "scope": "public"}}
    assert entry["output_schemas"] is False
    assert entry["inbound"] == {"mode": "none"}
    assert entry["members"] == [
        {
            "service": {"id": service.id, "name": "Echo API", "version": "2.1", "hash": service.compiled_hash},
            "plan": plan.id,
            "backend_endpoint": "https://echo.example/v1",
            "fallback_endpoints": [],
            "backend_timeout_ms": 2_000,
            "include": ["get_*"],
            "exclude": ["getStatus"],
            "tool_prefix": "echo_",
            "read_only_tools": None,
            "credentials": [{"kind": "bearer", "fields": {}, "values": {"token": "tok-123"}}],
            "header_policy": None,
            "backend_tls": None,
            "artifacts": [],
        }
    ]


def test_the_wire_form_embeds_the_compiled_services(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    service = import_echo(plane, acme).service
    with plane.session() as session:
        plan, _ = plans.create(session, acme, service.id, "main", {})
        expositions.create(session, acme, plan.id)
    built = _sealed(plane, acme)
    decoded = orjson.loads(snapshot.to_json(built))
    assert decoded["services"] == {service.compiled_hash: orjson.loads(service.compiled)}
    assert decoded["expositions"][0]["members"][0]["credentials"] == []
    assert decoded["revision"] == built["revision"]


def test_an_api_key_plan_sends_the_key_hash_only(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    service = import_echo(plane, acme).service
    with plane.session() as session:
        plan, key = plans.create(session, acme, service.id, "main", {"inbound_mode": "api_key"})
        expositions.create(session, acme, plan.id)
    assert key is not None
    built = _sealed(plane, acme)
    assert built["expositions"][0]["inbound"] == {"mode": "api_key", "key_hash": sha256(key.encode())}
    assert key.encode() not in snapshot.to_json(built)


def test_services_the_gateway_has_are_not_sent_again(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    echo = import_echo(plane, acme).service
    pets = import_spec(plane, acme, spec()).service
    with plane.session() as session:
        for service in (echo, pets):
            plan, _ = plans.create(session, acme, service.id, "main", {})
            expositions.create(session, acme, plan.id)
    everything = _build(plane, acme)
    assert set(everything["services"]) == {echo.compiled_hash, pets.compiled_hash}
    partial = _build(plane, acme, known=(echo.compiled_hash,))
    assert list(partial["services"]) == [pets.compiled_hash]
    assert partial["expositions"] == everything["expositions"]  # still referenced by hash
    assert {m["service"]["hash"] for e in partial["expositions"] for m in e["members"]} == {
        echo.compiled_hash,
        pets.compiled_hash,
    }
    assert _build(plane, acme, known=(echo.compiled_hash, pets.compiled_hash))["services"] == {}


def test_a_service_exposed_twice_is_sent_once(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    echo = import_echo(plane, acme).service
    with plane.session() as session:
        first, _ = plans.create(session, acme, echo.id, "first", {"include": ["getItem"]})
        second, _ = plans.create(session, acme, echo.id, "second", {"include": ["slow"]})
        expositions.create(session, acme, first.id, name="one")
        expositions.create(session, acme, second.id, name="two")
    built = _build(plane, acme)
    assert list(built["services"]) == [echo.compiled_hash]
    assert {e["name"]: e["members"][0]["include"] for e in built["expositions"]} == {
        "one": ["getItem"],
        "two": ["slow"],
    }


def test_a_gateway_gets_the_expositions_of_the_groups_it_serves(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    echo = import_echo(plane, acme).service
    pets = import_spec(plane, acme, spec()).service
    with plane.session() as session:
        eu = groups.create(session, acme, "eu", {"region": "eu", "tier": "gold"})
        echo_plan, _ = plans.create(session, acme, echo.id, "main", {})
        pets_plan, _ = plans.create(session, acme, pets.id, "main", {})
        expositions.create(session, acme, echo_plan.id, name="everywhere")
        expositions.create(session, acme, pets_plan.id, eu.id, "eu-only")
    assert _names(_build(plane, acme)) == ["eu-only", "everywhere"]
    eu_gateway = _build(plane, acme, {"region": "eu"})
    assert _names(eu_gateway) == ["eu-only"]
    assert list(eu_gateway["services"]) == [pets.compiled_hash]  # only what it serves
    assert _names(_build(plane, acme, {"region": "eu", "tier": "gold"})) == ["eu-only"]
    us_gateway = _build(plane, acme, {"region": "us"})
    assert (us_gateway["expositions"], us_gateway["services"]) == ([], {})


def test_a_gateway_gets_its_own_organizations_expositions(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    globex = new_org(plane, "globex")
    for organization_id, name in ((acme, "acme-echo"), (globex, "globex-echo")):
        service = import_echo(plane, organization_id).service
        with plane.session() as session:
            secret = secrets.create(session, plane.keys, organization_id, "t", "bearer", {}, {"token": name})
            plan, _ = plans.create(session, organization_id, service.id, "main", {"secret_id": secret.id})
            expositions.create(session, organization_id, plan.id, name=name)
    for organization_id, name in ((acme, "acme-echo"), (globex, "globex-echo")):
        built = _build(plane, organization_id)
        assert _names(built) == [name]
        [entry] = built["expositions"]
        assert entry["members"][0]["credentials"][0]["values"] == {"token": name}
        with plane.session() as session:
            assert built["revision"] == changes.latest(session, organization_id)
    everyone = _build(plane, None)
    assert {(e["organization"], e["name"]) for e in everyone["expositions"]} == {
        ("acme", "acme-echo"),
        ("globex", "globex-echo"),
    }
    with plane.session() as session:
        assert everyone["revision"] == changes.latest(session)
    assert len(everyone["services"]) == 1  # the same compiled service, whichever organization imported it


def test_rotated_credentials_reach_the_next_snapshot(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    service = import_echo(plane, acme).service
    with plane.session() as session:
        secret = secrets.create(
            session, plane.keys, acme, "basic", "basic", {"username": "robot"}, {"password": "first"}
        )
        plan, _ = plans.create(session, acme, service.id, "main", {"secret_id": secret.id})
        expositions.create(session, acme, plan.id)
    before = _build(plane, acme)
    with plane.session() as session:
        secrets.rotate(session, plane.keys, acme, secret.id, {"password": "second"})
    after = _build(plane, acme)
    assert after["revision"] > before["revision"]
    assert after["expositions"][0]["members"][0]["credentials"] == [
        {"kind": "basic", "fields": {"username": "robot"}, "values": {"password": "second"}}
    ]


def test_an_organization_without_expositions_gets_an_empty_snapshot(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    import_echo(plane, acme)
    built = _build(plane, acme)
    assert (built["expositions"], built["services"]) == ([], {})
    assert built["revision"] > 0


def test_a_member_carries_the_artifacts_its_plan_selects_in_attachment_order(plane: ControlPlane) -> None:
    acme = new_org(plane, "acme")
    service = import_echo(plane, acme).service
    with plane.session() as session:
        for name, prompt in (("second-attached.yaml", "b"), ("first-attached.yaml", "a")):
            services.attach(session, acme, service.id, name, prompts("Echo API", "2.1", prompt))
        services.attach(session, acme, service.id, "second-attached.yaml", prompts("Echo API", "2.1", "b2"))
        every, _ = plans.create(session, acme, service.id, "every", {"backend_endpoint": "https://e.example"})
        selecting = {"backend_endpoint": "https://e.example", "artifacts": ["first-attached.yaml"]}
        one, _ = plans.create(session, acme, service.id, "one", selecting)
        expositions.create(session, acme, every.id, name="every")
        expositions.create(session, acme, one.id, name="one")
    members = {e["name"]: e["members"][0] for e in _build(plane, acme)["expositions"]}
    served = [(a["name"], a["kind"], list(a["document"]["prompts"])) for a in members["every"]["artifacts"]]
    # attaching a name again replaces the file in its place
    assert served == [("second-attached.yaml", "Prompts", ["b2"]), ("first-attached.yaml", "Prompts", ["a"])]
    assert [a["name"] for a in members["one"]["artifacts"]] == ["first-attached.yaml"]
