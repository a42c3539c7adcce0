"""`apimcp approvals` against a live control plane: calls waiting for an admin are listed in a table or as JSON,
approved or refused by id; a request decided already, an unknown id or a wrong status is one clear line."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from tests.cli.invoking import run
from tests.deployment.harness import Deployment


def _exposition(live: Deployment, name: str) -> str:
    service = live.api.import_echo(name=name)
    _, exposition = live.api.expose(service["id"], live.backend, name)
    return str(exposition["id"])


def _submit(live: Deployment, gateway_token: str, exposition: str, digest: str) -> dict[str, Any]:
    call = {"exposition": exposition, "tool": "delete_item", "digest": digest, "caller": "https://idp.example ann",
            "question": f"Approve delete_item with id={digest}?", "lifetime": 600}  # fmt: skip
    response = httpx2.post(
        f"{live.base}/api/v1/gateway/approvals", json=call, headers={"Authorization": f"Bearer {gateway_token}"}
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_approvals_are_listed_approved_and_refused(logged_in: Deployment) -> None:
    live = logged_in
    assert run("approvals", "list").output.strip() == "No call is waiting for an approval."
    gateway = live.api.call("POST", "/tokens", 201, json={"name": "edge", "kind": "gateway"})["token"]
    exposition = _exposition(live, "shelf")
    first, second = (_submit(live, gateway, exposition, digest) for digest in ("7", "8"))

    table = run("approvals", "list").output
    assert all(header in table for header in ("ID", "TOOL", "CALLER", "QUESTION", "STATUS", "EXPIRES"))
    (row,) = [line for line in table.splitlines() if first["id"] in line]
    assert "delete_item" in row and "https://idp.example ann" in row and "Approve delete_item with id=7?" in row
    assert "pending" in row
    listed = json.loads(run("approvals", "list", "-o", "json").output)
    assert [a["id"] for a in listed] == [second["id"], first["id"]]

    approved = run("approvals", "approve", first["id"]).output
    assert f"Approved delete_item ({first['id']})" in approved and "decided_by" in approved
    refused = json.loads(run("approvals", "refuse", second["id"], "-o", "json").output)
    assert refused["status"] == "refused" and refused["decided_by"].startswith("token ")
    assert _submit(live, gateway, exposition, "7")["status"] == "approved"
    assert _submit(live, gateway, exposition, "8")["status"] == "refused"

    assert [a["id"] for a in json.loads(run("approvals", "list", "--status", "used", "-o", "json").output)] == [
        first["id"]
    ]
    every = json.loads(run("approvals", "list", "--status", "all", "-o", "json").output)
    assert {a["status"] for a in every} == {"used", "refused"}
    assert run("approvals", "list").output.strip() == "No call is waiting for an approval."


def test_refusals_are_one_clear_line(logged_in: Deployment) -> None:
    gateway = logged_in.api.call("POST", "/tokens", 201, json={"name": "edge-2", "kind": "gateway"})["token"]
    pending = _submit(logged_in, gateway, _exposition(logged_in, "stack"), "9")
    run("approvals", "refuse", pending["id"])
    again = run("approvals", "approve", pending["id"], code=1).output
    assert f"error: approval request {pending['id']!r} is refused already: only a pending one is decided" in again
    assert "error: no approval request 'nope'" in run("approvals", "approve", "nope", code=1).output
    wrong = run("approvals", "list", "--status", "maybe", code=2).output
    assert "--status is one of pending, approved, refused, used, all; got 'maybe'" in wrong
