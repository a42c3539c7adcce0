"""An approval by an administrator, for agents acting alone (`approver: admin`), through a gateway and its control
plane in one process (as `apimcp serve` runs them), in both eras: the first call is a tool error naming a pending
request; an admin approves it over REST; the same call made again goes on, once; the next one asks again. A
request an admin refuses keeps the call refused; other arguments make a request of their own; a decided request
cannot be decided again; every outcome is audited with the rule. (Each caller asks for itself: the unit tests of
`policies/admin_approval.py` and of `control/domain/approvals.py` show it.)"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.deployment.harness import Deployment, deployment, wait_until
from tests.support.mcp_http import McpHttp

RULES = [{"name": "deletes-need-an-admin", "when": 'tool.method == "DELETE"', "effect": "approve",
          "approver": "admin", "message": "Deleting cannot be undone.", "approval_seconds": 120}]  # fmt: skip
PENDING = re.compile(r"request (\S+) waits for one")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment, str]]:
    with deployment(tmp_path_factory.mktemp("admin-approvals") / "data") as running:
        service = running.api.import_echo()
        plan, _ = running.api.expose(
            service["id"], running.backend, "echo", inbound_mode="api_key", audit=True, policies=RULES
        )
        wait_until(lambda: running.served("/mcp/default/echo"))
        yield running, plan["api_key"]


Call = Callable[[str, dict[str, Any]], tuple[bool, str]]


def _caller(live: Deployment, key: str, era: str) -> Iterator[Call]:
    url = f"{live.base}/mcp/default/echo".replace("//localhost:", "//127.0.0.1:")
    with McpHttp(url) as mcp:
        mcp.http.headers["authorization"] = f"Bearer {key}"
        if era == "2026-07-28":

            def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                result = mcp.modern("tools/call", {"name": tool, "arguments": arguments}).result
                return bool(result.get("isError")), result["content"][0]["text"]

        else:
            session = mcp.initialize()

            def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
                result = session.request("tools/call", {"name": tool, "arguments": arguments}).result
                return bool(result.get("isError")), result["content"][0]["text"]

        yield call


def _pending(told: tuple[bool, str]) -> str:
    failed, text = told
    assert failed, text
    found = PENDING.search(text)
    assert found is not None, text
    assert "`apimcp approvals approve" in text and "within" in text
    return found.group(1)


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_call_an_admin_approved_goes_on_once(live: tuple[Deployment, str], era: str) -> None:
    running, key = live
    item = f"approve-{era}"
    for call in _caller(running, key, era):
        first = _pending(call("delete_item", {"itemId": item}))
        assert _pending(call("delete_item", {"itemId": item})) == first  # asked again: the same request
        (listed,) = [a for a in running.api.call("GET", "/approvals") if a["id"] == first]
        assert listed["question"] == f'Approve delete_item with itemId="{item}"? Deleting cannot be undone.'
        assert (listed["tool"], listed["status"]) == ("delete_item", "pending")
        decided = running.api.call("POST", f"/approvals/{first}/approve")
        assert decided["status"] == "approved" and decided["decided_by"]

        failed, text = call("delete_item", {"itemId": item})
        assert not failed, text
        assert '"method": "DELETE"' in text or '"method":"DELETE"' in text
        assert _pending(call("delete_item", {"itemId": item})) != first  # used: the next call asks again
        failed, text = call("get_item", {"itemId": item})  # no rule holds
        assert not failed, text


def test_a_refused_request_keeps_the_call_refused_and_other_arguments_ask_for_themselves(
    live: tuple[Deployment, str],
) -> None:
    running, key = live
    for call in _caller(running, key, "2026-07-28"):
        refused = _pending(call("delete_item", {"itemId": "r1"}))
        other_arguments = _pending(call("delete_item", {"itemId": "r2"}))
        assert other_arguments != refused
        running.api.call("POST", f"/approvals/{refused}/refuse")
        assert call("delete_item", {"itemId": "r1"}) == (
            True, f"Calling delete_item was refused by an administrator (approval request {refused})"
        )  # fmt: skip
        running.api.call("POST", f"/approvals/{other_arguments}/approve")
        assert _pending(call("delete_item", {"itemId": "r3"})) not in (refused, other_arguments)
        assert call("delete_item", {"itemId": "r2"})[0] is False
        again = running.api.call("POST", f"/approvals/{refused}/approve", 409)
        assert "refused" in str(again)


def test_the_audit_trail_tells_each_outcome_with_the_rule(live: tuple[Deployment, str]) -> None:
    running, key = live
    for call in _caller(running, key, "2026-07-28"):
        request = _pending(call("delete_item", {"itemId": "audited"}))
        running.api.call("POST", f"/approvals/{request}/approve")
        assert call("delete_item", {"itemId": "audited"})[0] is False

    def outcomes() -> list[str]:
        trail = running.api.call("GET", "/audit", params={"limit": "1000"})
        return [
            e.get("outcome", "") for e in trail if e.get("action") == "approval" and e.get("target") == "delete_item"
        ]

    wait_until(lambda: {"pending", "approved"} <= set(outcomes()))
    trail = running.api.call("GET", "/audit", params={"limit": "1000"})
    assert all(e.get("rule") == "deletes-need-an-admin" for e in trail if e.get("action") == "approval")
