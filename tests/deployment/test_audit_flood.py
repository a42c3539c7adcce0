"""A flood of refused requests against an exposition, through its gateway to a control plane on PostgreSQL (in
one process, as `apimcp serve` runs them): the organization's trail keeps the tool calls made before the flood,
and tells of the flood in a few events whose counts add up to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from apimcp.control.domain import audit, orgs
from apimcp.control.store import open_store
from tests.control.conftest import _postgres_schema
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.support.mcp_http import McpHttp

FLOOD = 1000
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture
def postgres() -> Iterator[str]:
    yield from _postgres_schema()


def _trail(live: Deployment, **query: str) -> list[dict[str, Any]]:
    return list(live.api.call("GET", "/audit", params={"limit": "1000", **query}))


def test_a_flood_of_bad_api_keys_leaves_the_tool_calls_in_the_trail_and_is_counted_in_full(
    tmp_path: Path, postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding M4 (issue 21): every refused request was an event, and the newest 10,000 of an organization were
    kept, so 10,000 requests with a bad key pushed out every event telling who called which tool. Here the
    control plane keeps 200 instead, so that the flood's 1,000 events would push out the tool calls."""
    monkeypatch.setattr(audit, "KEEP", 200)
    with deployment(tmp_path / "data", postgres) as live:
        service = live.api.import_echo()
        plan, _ = live.api.expose(
            service["id"], live.backend, "echo", include=["get_item"], inbound_mode="api_key", audit=True
        )
        url = f"{live.base}/mcp/default/echo".replace("//localhost:", "//127.0.0.1:")
        wait_until(lambda: live.served("/mcp/default/echo"))
        with McpHttp(url) as mcp:
            mcp.http.headers["authorization"] = f"Bearer {plan['api_key']}"
            for item in ("1", "2", "3"):
                called = mcp.modern("tools/call", {"name": "get_item", "arguments": {"itemId": item}})
                assert called.status == 200, called.text
        wait_until(lambda: len([e for e in _trail(live) if e["action"] == "tools/call"]) == 3)

        headers = {"Authorization": "Bearer not-the-key", "Connection": "close"}
        with httpx2.Client(headers=headers, timeout=30) as anonymous:
            statuses = {anonymous.post(url, json=PING).status_code for _ in range(FLOOD)}
        assert statuses == {401}
        wait_until(lambda: any(e.get("reason") == "invalid_api_key" for e in _trail(live)))
        while_flooded = _trail(live)
    # The gateway stopped: what it counted of the flood was reported as it went.
    store = open_store(postgres)
    try:
        with store.session() as session:
            trail = audit.latest(session, orgs.by_name(session, "default").id, 1000)
    finally:
        store.dispose()

    for listed in (while_flooded, trail):
        assert [e["target"] for e in listed if e["action"] == "tools/call"] == ["get_item"] * 3
    flood = [e for e in trail if e.get("reason") == "invalid_api_key"]
    assert 1 < len(flood) <= 5
    assert sum(e.get("count", 1) for e in flood) == FLOOD
    assert {(e["action"], e["status"], e["client"]) for e in flood} == {("authentication", 401, "127.0.0.1")}
    assert len(trail) < 20  # the exposition's wait (missing keys), three tool calls, the flood's few
