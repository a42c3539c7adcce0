"""What a gateway does when an MCP server says a list changed: at most one report per service and quiet period,
to the control plane it follows, or a line in the log of a gateway serving a configuration file."""

from __future__ import annotations

import logging

import pytest

from apimcp.federation.listener import ProgressRoutes
from apimcp.gateway.upstream_lists import QUIET_SECONDS, UpstreamLists

pytestmark = pytest.mark.anyio


def test_one_report_per_service_and_quiet_period() -> None:
    now = [100.0]
    lists = UpstreamLists(clock=lambda: now[0])
    reported: list[str] = []
    lists.report = reported.append
    for _ in range(50):  # a server that keeps saying it
        lists.heard("s1", "tools")
    lists.heard("s2", "prompts")
    assert reported == ["s1", "s2"]
    now[0] += QUIET_SECONDS + 1
    lists.heard("s1", "resources")
    assert reported == ["s1", "s2", "s1"]


def test_a_gateway_serving_a_file_says_the_change_is_not_served(caplog: pytest.LogCaptureFixture) -> None:
    lists = UpstreamLists()
    with caplog.at_level(logging.WARNING, logger="apimcp.gateway"):
        lists.heard("notes", "tools")
        lists.heard("notes", "tools")
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "the MCP server of service notes says its tools changed; this gateway serves what it imported until it is "
        "started again"
    ]


async def test_servers_notifications_reach_whoever_listens() -> None:
    routes = ProgressRoutes()
    changed: list[str] = []
    updated: list[str] = []
    routes.lists_changed.append(changed.append)
    routes.updated.append(updated.append)
    for method in ("tools", "prompts", "resources"):
        assert await routes.notified(f"notifications/{method}/list_changed", None)
    assert await routes.notified("notifications/resources/updated", {"uri": "notes://1"})
    assert await routes.notified("notifications/resources/updated", {"uri": "x" * 9000})  # taken, and dropped
    assert not await routes.notified("notifications/message", {"level": "info"})
    assert changed == ["tools", "prompts", "resources"]
    assert updated == ["notes://1"]
