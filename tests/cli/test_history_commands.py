"""`apimcp history`, `diff` and `rollback` against a control plane with its gateway: tables, JSON, clear errors, and
a rolled-back plan served by the gateway that follows the control plane."""

from __future__ import annotations

import json

from tests.cli.invoking import run
from tests.deployment.harness import Deployment, wait_until
from tests.support.mcp_http import McpHttp

SECRET = "tok-5e1f0a9b8c7d-never-printed"


def _tools(url: str) -> set[str]:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list")
        assert reply.status == 200, reply
        return {tool["name"] for tool in reply.result["tools"]}


def test_a_rolled_back_plan_is_what_the_gateway_serves(logged_in: Deployment) -> None:
    live = logged_in
    service = live.api.import_echo("shelf", "1")
    plan, _ = live.api.expose(service["id"], live.backend, "shelf", include=["get_item"])
    url = f"{live.base}/mcp/default/shelf"
    wait_until(lambda: live.served("/mcp/default/shelf"))
    assert _tools(url) == {"get_item"}
    live.api.call("PATCH", f"/plans/{plan['id']}", json={"include": ["get_item", "delete_item"]})
    wait_until(lambda: _tools(url) == {"get_item", "delete_item"})

    shown = run("diff", "plan", plan["id"], "1", "2").stdout
    assert "include" in shown and '["get_item", "delete_item"]' in shown

    rolled = run("rollback", "plan", plan["id"], "1").stdout
    assert "Rolled plan shelf back to version 1 (now version 3)." in rolled
    assert "include" in rolled
    wait_until(lambda: _tools(url) == {"get_item"})  # served through the ordinary change revision

    trail = run("history", "--object", plan["id"]).stdout
    (line,) = [row for row in trail.splitlines() if "rolled back" in row]
    assert "to v1" in line and "bootstrap (admin)" in line
    assert json.loads(run("diff", "plan", plan["id"], "1", "3", "-o", "json").stdout)["changes"] == []


def test_history_lists_changes_in_tables_and_json(logged_in: Deployment) -> None:
    live = logged_in
    service = live.api.import_echo("ledger", "1")
    secret = live.api.call("POST", "/secrets", 201, json={"name": "ledger-key", "kind": "bearer",
                                                          "values": {"token": SECRET}})  # fmt: skip
    _, exposition = live.api.expose(service["id"], live.backend, "ledger", secret_ids=[secret["id"]])
    live.api.call("PATCH", f"/expositions/{exposition['id']}", json={"name": "ledger-2"})

    table = run("history").stdout
    assert "VERSION" in table and "ledger-key" in table and "ledger-2" in table
    page = json.loads(run("history", "--kind", "exposition", "-o", "json").stdout)
    assert page["items"][0]["object_id"] == exposition["id"] and page["items"][0]["action"] == "updated"
    assert SECRET not in run("history", "--kind", "secret", "-o", "json").stdout
    assert SECRET not in run("history", "--limit", "200").stdout

    narrow = run("history", "--kind", "plan", "--limit", "1")
    assert "--offset 1 for more" in narrow.stderr
    template = live.api.call("POST", "/templates", 201, json={"name": "ledger-preset", "settings": {"audit": True}})
    kept = json.loads(run("history", "--kind", "template", "-o", "json").stdout)  # refused as a kind before
    assert [item["object_id"] for item in kept["items"]] == [template["id"]]

    by_name = run("diff", "exposition", "ledger-2", "1", "2").stdout
    assert "ledger" in by_name and "ledger-2" in by_name
    run("rollback", "exposition", "ledger-2", "1")
    assert live.api.call("GET", f"/expositions/{exposition['id']}")["name"] == "ledger"


def test_history_commands_fail_clearly(logged_in: Deployment) -> None:
    assert "--kind is one of" in run("history", "--kind", "tokens", code=2).stderr
    assert "--limit is 1 to 200" in run("history", "--limit", "500", code=2).stderr
    assert "no plan 'nope' in the history" in run("diff", "plan", "nope", "1", "2", code=1).stderr
    service = logged_in.api.import_echo("third", "1")
    plan, _ = logged_in.api.expose(service["id"], logged_in.backend, "third")
    assert "has no version 7" in run("rollback", "plan", plan["id"], "7", code=1).stderr
    assert "Invalid value" in run("diff", "thing", "x", "1", "2", code=2).output
