"""Gateway keys over the REST API: admins register and revoke them; snapshots are sealed only to registered keys."""

from __future__ import annotations

import threading
import time

import orjson

from apimcp.control.api.sync_routes import LONG_POLL_SECONDS
from apimcp.sealing.keys import GatewayKey
from apimcp.sealing.snapshots import SealError, open_exposition
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem

SECRET = "backend-token-that-stays-sealed"


def _expose_with_secret(org: Org) -> None:
    service = import_echo(org.user)
    secret = created(org.user.post("/secrets", json={"name": "s", "kind": "bearer", "values": {"token": SECRET}}))
    plan = created(org.user.post("/plans", json={"name": "p", "service_id": service["id"], "secret_id": secret["id"]}))
    created(org.user.post("/expositions", json={"plan_id": plan["id"], "name": "echo"}))


def test_a_gateway_token_no_longer_reads_every_secret_in_clear_from_the_snapshot(api: Api) -> None:
    """The finding: any gateway token read every secret of its organization in clear from /gateway/snapshot.
    The snapshot now carries them sealed to a registered gateway key: without its private half, no secret."""
    acme = api.org("acme")
    _expose_with_secret(acme)
    response = acme.snapshot_response()
    assert response.status_code == 200
    assert SECRET not in response.text
    [exposition] = response.json()["expositions"]
    try:
        open_exposition(exposition, GatewayKey.generate())
        raise AssertionError("opened with a key that is not the gateway's")
    except SealError:
        pass
    opened = open_exposition(exposition, acme.gateway_key)
    assert opened["members"][0]["credentials"][0]["values"] == {"token": SECRET}


def test_a_gateway_without_a_registered_key_gets_no_snapshot(api: Api) -> None:
    acme = api.org("acme")
    _expose_with_secret(acme)
    missing = problem(acme.gateway.post("/gateway/snapshot", json={"name": "gw"}), 403, "public_key")
    assert "apimcp gateway-key create" in missing["detail"]
    stranger = GatewayKey.generate()
    unknown = problem(acme.snapshot_response(public_key=stranger.public.text), 403, "public_key")
    assert f"gateway key {stranger.public.fingerprint} is not registered in organization acme" in unknown["detail"]
    problem(acme.snapshot_response(public_key="not-a-key"), 422, "public_key")
    # the key of another organization does not open this one
    bravo = api.org("bravo")
    problem(acme.snapshot_response(public_key=bravo.gateway_key.public.text), 403, "public_key")
    assert ok(acme.user.get("/gateways")) == []  # refused gateways are not registered


def test_only_admins_register_and_revoke_gateway_keys(api: Api) -> None:
    acme = api.org("acme")
    member = api.member(acme)
    key = GatewayKey.generate()
    refused = problem(member.post("/gateway-keys", json={"name": "site-b", "public_key": key.public.text}), 403)
    assert refused["detail"] == (
        "POST /api/v1/gateway-keys needs the admin role in organization acme; "
        "this is a user token, with the editor role"
    )
    registered = created(acme.user.post("/gateway-keys", json={"name": "site-b", "public_key": key.public.text}))
    assert registered["fingerprint"] == key.public.fingerprint
    assert registered["public_key"] == key.public.text
    assert registered["revoked_at"] is None
    assert [k["name"] for k in ok(member.get("/gateway-keys"))] == ["edge-key", "site-b"]
    assert (
        "DELETE /api/v1/gateway-keys/{key_id} needs the admin role"
        in problem(member.delete(f"/gateway-keys/{registered['id']}"), 403)["detail"]
    )
    assert ok(acme.snapshot_response(public_key=key.public.text))["expositions"] == []


def test_gateway_key_requests_are_validated(api: Api) -> None:
    acme = api.org("acme")
    key = GatewayKey.generate()
    problem(acme.user.post("/gateway-keys", json={"name": "k", "public_key": "A" * 44}), 422, "public_key")
    problem(acme.user.post("/gateway-keys", json={"name": "k", "public_key": "A" * 43}), 422, "public_key")  # low order
    problem(acme.user.post("/gateway-keys", json={"name": "bad name!", "public_key": key.public.text}), 422, "name")
    again = {"name": "other", "public_key": acme.gateway_key.public.text}
    assert "already registered as 'edge-key'" in problem(acme.user.post("/gateway-keys", json=again), 409)["detail"]
    same_name = {"name": "edge-key", "public_key": key.public.text}
    problem(acme.user.post("/gateway-keys", json=same_name), 409, "name")
    problem(acme.gateway.post("/gateway-keys", json=same_name), 401)
    assert len(ok(acme.user.get("/gateway-keys"))) == 1


def test_a_revoked_key_gets_no_snapshot_and_waiting_gateways_learn_at_once(api: Api) -> None:
    acme = api.org("acme")
    _expose_with_secret(acme)
    revision = acme.snapshot()["revision"]
    [key] = ok(acme.user.get("/gateway-keys"))
    answers: list[float] = []

    def wait() -> None:
        started = time.monotonic()
        acme.gateway.get("/gateway/changes", params={"since": revision}, timeout=30)
        answers.append(time.monotonic() - started)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    revoked = ok(acme.user.delete(f"/gateway-keys/{key['id']}"))
    assert revoked["revoked_at"] is not None
    waiter.join(timeout=30)
    assert len(answers) == 1 and answers[0] < LONG_POLL_SECONDS / 2  # timing-ok: woken, not at the poll's end
    body = problem(acme.snapshot_response(), 403, "public_key")
    assert "gateway key 'edge-key'" in body["detail"]
    assert "was revoked" in body["detail"]
    reregistered = {"name": "again", "public_key": acme.gateway_key.public.text}
    assert "was revoked" in problem(acme.user.post("/gateway-keys", json=reregistered), 409)["detail"]
    assert SECRET.encode() not in orjson.dumps(ok(acme.user.get("/gateway-keys")))
