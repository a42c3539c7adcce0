"""No cache keeps a REST API answer (issue 21, L4): `Cache-Control: no-store` on every /api/v1 response."""

from __future__ import annotations

import httpx2

from tests.control.api_harness import Api, import_echo


def test_gateway_snapshot_and_changes_and_every_api_answer_say_no_store(api: Api) -> None:
    """The sealed snapshot and the long poll of gateways, and the answers that show a value once (a new token, a
    plan's API key, a new organization's first token), like every other answer and refusal of the API."""
    acme = api.org("acme")
    service = import_echo(acme.user)
    plan = acme.user.post("/plans", json={"service_id": service["id"], "name": "keyed", "inbound_mode": "api_key"})
    answers = {
        "snapshot": acme.snapshot_response(),
        "changes": acme.gateway.get("/gateway/changes", params={"since": -1}),
        "token": acme.user.post("/tokens", json={"name": "ci", "kind": "user"}),
        "plan with its api key": plan,
        "secrets": acme.user.get("/secrets"),
        "refused": api.client().get("/services"),
        "unknown": acme.user.get("/nothing"),
    }
    assert {name: (r.status_code, r.headers.get("cache-control")) for name, r in answers.items()} == {
        "snapshot": (200, "no-store"),
        "changes": (200, "no-store"),
        "token": (201, "no-store"),
        "plan with its api key": (201, "no-store"),
        "secrets": (200, "no-store"),
        "refused": (401, "no-store"),
        "unknown": (404, "no-store"),
    }
    assert "api_key" in answers["plan with its api key"].json()
    assert all(len(r.headers.get_list("cache-control")) == 1 for r in answers.values())  # the route's own gave way
    console = httpx2.get(f"{api.base}/console/", timeout=10)
    assert console.headers["cache-control"] != "no-store"  # the API's rule, not the console's static files


def test_the_control_plane_s_own_refusals_under_console_carry_the_console_s_headers(api: Api) -> None:
    """The finding: the framework's 405 and the request limits' 431 under /console/ had no security headers."""
    refused = [
        httpx2.post(f"{api.base}/console/", timeout=10),
        httpx2.get(f"{api.base}/console/", headers={"X-Big": "a" * 70_000}, timeout=10),
    ]
    assert [r.status_code for r in refused] == [405, 431]
    for response in refused:
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
