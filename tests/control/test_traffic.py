"""Traffic as gateways report it: added up per minute, checked, kept to the reporting organization, rolled up
into hours, and read back as a window's figures (totals, series, busiest and failing tools, gateways)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
from sqlalchemy import func, select

from apimcp.control.domain import traffic
from apimcp.control.models import TrafficCount
from apimcp.traffic.histogram import bucket_of, empty
from apimcp.traffic.tally import OTHER, TrafficTally
from tests.control.api_harness import Api, Org, created, import_echo, ok, problem


def _exposition(org: Org, name: str) -> dict[str, Any]:
    service = import_echo(org.user)
    plan = created(org.user.post("/plans", json={"service_id": service["id"], "name": f"{name}-plan"}))
    exposition: dict[str, Any] = created(org.user.post("/expositions", json={"plan_id": plan["id"], "name": name}))
    return exposition


def _rows(exposition_id: str, calls: list[tuple[str, str, float]]) -> list[dict[str, Any]]:
    tally = TrafficTally()
    for tool, outcome, milliseconds in calls:
        tally.count(exposition_id, "tools/call", tool, outcome, milliseconds, milliseconds / 2)
    return tally.take(1000)


def _post(org: Org, rows: list[dict[str, Any]], name: str = "edge-1", revision: int = 0) -> Any:
    return org.gateway.post("/gateway/traffic", json={"name": name, "revision": revision, "rows": rows})


def _report(org: Org, rows: list[dict[str, Any]], name: str = "edge-1", revision: int = 0) -> Any:
    response = _post(org, rows, name, revision)
    assert response.status_code == 202, response.text
    return response.json()


def test_reports_add_up_and_read_back_as_a_window(api: Api) -> None:
    acme = api.org("acme-traffic")
    shop = _exposition(acme, "shop")
    ok(acme.snapshot_response("edge-1"))
    fast = [("get_item", "success", 3.0)] * 40
    failing = [("delete_item", "tool_error", 150.0)] * 5 + [("delete_item", "error", 150.0)] * 2
    rows = _rows(shop["id"], fast + failing)
    assert _report(acme, rows, revision=7) == {"kept": len(rows), "dropped": 0}
    _report(acme, _rows(shop["id"], [("get_item", "success", 3.0)] * 10), revision=7)  # added to the first

    figures = ok(acme.user.get("/traffic", params={"window": "hour"}))
    assert figures["totals"]["calls"] == 57
    assert figures["totals"]["errors"] == 7
    assert figures["totals"]["outcomes"] == {"error": 2, "tool_error": 5}
    assert 2 < figures["totals"]["p50_ms"] <= 5
    assert 100 < figures["totals"]["p95_ms"] <= 200
    assert figures["totals"]["backend_p50_ms"] <= 2
    assert len(figures["series"]) == 60 and figures["step_seconds"] == 60
    assert sum(point["calls"] for point in figures["series"]) == 57
    assert [(t["tool"], t["calls"]) for t in figures["busiest"]] == [("get_item", 50), ("delete_item", 7)]
    assert [(t["tool"], t["errors"]) for t in figures["failing"]] == [("delete_item", 7)]
    assert figures["expositions"][0]["exposition"] == "shop"
    (gateway,) = figures["gateways"]
    assert gateway["name"] == "edge-1" and gateway["healthy"] and gateway["revision"] == 7

    one_tool = ok(acme.user.get("/traffic", params={"exposition": "shop", "tool": "delete_item", "window": "day"}))
    assert one_tool["totals"]["calls"] == 7 and len(one_tool["series"]) == 24
    problem(acme.user.get("/traffic", params={"window": "week"}), 422, "window")
    problem(acme.user.get("/traffic", params={"exposition": "nope"}), 404, "exposition")


def test_an_organization_counts_only_its_own_expositions(api: Api) -> None:
    acme, other = api.org("acme-traffic-2"), api.org("other-traffic")
    theirs = _exposition(other, "theirs")
    ok(acme.snapshot_response("edge-1"))
    answer = _report(acme, _rows(theirs["id"], [("get_item", "success", 1.0)]))
    assert answer == {"kept": 0, "dropped": 1}
    assert ok(other.user.get("/traffic"))["totals"]["calls"] == 0
    assert ok(acme.user.get("/traffic"))["totals"]["calls"] == 0


def test_what_a_report_holds_is_checked_before_anything_is_kept(api: Api) -> None:
    acme = api.org("acme-traffic-3")
    shop = _exposition(acme, "shop3")
    good = _rows(shop["id"], [("get_item", "success", 1.0)])[0]
    for bad in (
        {**good, "latency": [1, 2]},
        {**good, "method": "made/up"},
        {**good, "start": good["start"] + 1},
        {**good, "calls": -1},
        {**good, "tool": "x", "method": "tools/list"},
        {**good, "outcomes": {str(n): 1 for n in range(20)}},
        {**good, "method": ["tools/call"]},
    ):
        problem(_post(acme, [good, bad]), 422, "rows")
    problem(_post(acme, [good] * 1001), 422)
    problem(_post(acme, [good], revision=2**70), 422, "revision")  # on SQLite, an OverflowError: a 500
    assert ok(acme.user.get("/traffic"))["totals"]["calls"] == 0
    assert acme.user.post("/gateway/traffic", json={"name": "x", "revision": 0, "rows": []}).status_code in (401, 403)
    stale = {**good, "start": int(time.time()) // 60 * 60 - 2 * 86400}
    assert _report(acme, [stale]) == {"kept": 0, "dropped": 1}


def test_old_minutes_roll_up_into_hours_and_still_count_for_the_day(api: Api) -> None:
    acme = api.org("acme-traffic-4")
    shop = _exposition(acme, "shop4")
    now = datetime.now(UTC)
    five_hours_ago = int((now - timedelta(hours=5)).timestamp()) // 3600 * 3600
    latency = empty()
    latency[bucket_of(8.0)] = 3
    with api.plane.session() as session:
        for minute in (0, 60, 120):
            session.add(TrafficCount(
                organization_id=acme.id, exposition_id=shop["id"], method="tools/call", tool="get_item",
                start=datetime.fromtimestamp(five_hours_ago + minute, UTC), seconds=60, calls=3,
                outcomes={"error": 1}, latency=latency, backend=empty(),
            ))  # fmt: skip
    with api.plane.session() as session:
        assert traffic.roll_up(session, now) == 3
    with api.plane.session() as session:
        periods = session.execute(
            select(TrafficCount.seconds, func.sum(TrafficCount.calls))
            .where(TrafficCount.organization_id == acme.id)
            .group_by(TrafficCount.seconds)
        ).all()
        assert periods == [(3600, 9)]
    day = ok(acme.user.get("/traffic", params={"window": "day"}))
    assert day["totals"]["calls"] == 9 and day["totals"]["errors"] == 3
    assert 5 < day["totals"]["p50_ms"] <= 10
    assert ok(acme.user.get("/traffic", params={"window": "hour"}))["totals"]["calls"] == 0


def test_reports_arriving_together_add_up_exactly(api: Api) -> None:
    """The finding: a row was read, added to and written back, so reports arriving together lost counts (or both
    inserted the row, and one failed with a 500)."""
    acme = api.org("acme-traffic-race")
    shop = _exposition(acme, "shop-race")
    ok(acme.snapshot_response("edge-1"))

    def report(n: int) -> int:
        rows = _rows(shop["id"], [("get_item", "success", 3.0)])
        headers = {"Authorization": f"Bearer {acme.gateway_token}", "Connection": "close"}
        with httpx2.Client(base_url=f"{api.base}/api/v1", timeout=30, headers=headers) as gateway:
            sent = gateway.post("/gateway/traffic", json={"name": f"edge-{n % 4}", "revision": 0, "rows": rows})
        return sent.status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(report, range(80)))
    assert statuses == [202] * 80
    assert ok(acme.user.get("/traffic"))["totals"]["calls"] == 80


def test_a_tool_name_no_database_keeps_is_counted_as_other(api: Api) -> None:
    """The finding: a NUL in a tool's name (a client's made-up name) failed the whole report on PostgreSQL, and
    the gateway sent it again for ever."""
    acme = api.org("acme-traffic-nul")
    shop = _exposition(acme, "shop-nul")
    ok(acme.snapshot_response("edge-1"))
    rows = _rows(shop["id"], [("get_item", "success", 3.0)] * 5 + [("x\x00y", "error", 1.0), ("a\nb", "error", 1.0)])
    assert _report(acme, rows) == {"kept": 3, "dropped": 0}
    window = ok(acme.user.get("/traffic"))
    assert window["totals"]["calls"] == 7
    with api.plane.session() as session:
        tools = set(session.scalars(select(TrafficCount.tool).where(TrafficCount.exposition_id == shop["id"])))
    assert tools == {"get_item", OTHER}


def test_a_report_sent_again_with_its_id_is_counted_once(api: Api) -> None:
    """The finding: a report the control plane kept, whose answer never reached the gateway (a timeout), was sent
    again and counted twice: 40 calls read back as 80."""
    acme = api.org("acme-resent")
    shop = _exposition(acme, "shop")
    rows = _rows(shop["id"], [("get_item", "success", 3.0)] * 40)
    body = {"name": "edge-1", "revision": 0, "rows": rows, "report": "r" * 24}
    for kept in (1, 0):
        answer = acme.gateway.post("/gateway/traffic", json=body)
        assert answer.status_code == 202 and answer.json() == {"kept": kept, "dropped": 0}
    assert ok(acme.user.get("/traffic", params={"window": "hour"}))["totals"]["calls"] == 40
    _report(acme, rows)  # a report without an id (a gateway of before) is always kept
    assert ok(acme.user.get("/traffic", params={"window": "hour"}))["totals"]["calls"] == 80
    problem(acme.gateway.post("/gateway/traffic", json={**body, "report": "short"}), 422, "report")
