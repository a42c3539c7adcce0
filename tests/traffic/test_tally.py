"""The gateway's tally: counts by exposition, method, tool and minute; bounded whatever the traffic; what could
not be reported sent again as it was; histograms read as quantiles."""

from __future__ import annotations

import asyncio
from typing import Any

from apimcp.control.domain import traffic
from apimcp.traffic import reporting
from apimcp.traffic.histogram import BOUNDS_MS, SIZE, bucket_of, empty, quantile
from apimcp.traffic.outbox import Outbox
from apimcp.traffic.tally import DOOR, OTHER, TrafficTally


def test_a_latency_falls_in_the_bucket_its_bound_closes() -> None:
    assert bucket_of(0.3) == 0
    assert bucket_of(1.0) == 0
    assert bucket_of(1.5) == 1
    assert bucket_of(10**6) == SIZE - 1


def test_quantiles_are_read_inside_their_bucket() -> None:
    counts = empty()
    counts[bucket_of(3)] = 50  # (2, 5]
    counts[bucket_of(150)] = 50  # (100, 200]
    assert quantile(counts, 0.5) == 5.0
    assert 100 < (quantile(counts, 0.95) or 0) <= 200
    assert quantile(empty(), 0.5) is None
    slow = empty()
    slow[-1] = 3
    assert quantile(slow, 0.5) == BOUNDS_MS[-1]


def test_requests_are_counted_by_tool_with_their_outcomes_and_latencies() -> None:
    tally = TrafficTally()
    tally.count("e1", "tools/call", "get_item", "success", 3.0, 2.0)
    tally.count("e1", "tools/call", "get_item", "tool_error", 40.0, 35.0)
    tally.count("e1", "tools/list", "ignored", "success", 0.5)
    tally.count("e1", DOOR, None, "limited", None, times=7)
    rows = {(row["method"], row["tool"]): row for row in tally.take(100)}
    call = rows[("tools/call", "get_item")]
    assert call["calls"] == 2
    assert call["outcomes"] == {"tool_error": 1}
    assert sum(call["latency"]) == 2 and sum(call["backend"]) == 2
    assert rows[("tools/list", "")]["calls"] == 1 and sum(rows[("tools/list", "")]["backend"]) == 0
    assert rows[(DOOR, "")]["outcomes"] == {"limited": 7}
    assert sum(rows[(DOOR, "")]["latency"]) == 0  # a refusal at the door has no time of its own to count
    assert len(tally) == 0


def test_made_up_methods_and_tools_past_the_bound_are_counted_as_other() -> None:
    tally = TrafficTally(max_keys=3)
    tally.count("e1", "no/such/method", None, "error", 1.0)
    for number in range(50):
        tally.count("e1", "tools/call", f"made_up_{number}", "error", 1.0)
    rows = tally.take(100)
    assert len(rows) <= 4
    assert sum(row["calls"] for row in rows) == 51
    assert {row["method"] for row in rows} >= {OTHER, "tools/call"}
    assert any(row["method"] == "tools/call" and row["tool"] == OTHER and row["calls"] >= 47 for row in rows)


def test_the_rows_past_the_bound_are_rows_the_control_plane_keeps() -> None:
    """The finding: past the bound, a call of a tool not yet counted became a row of method `(other)` naming tool
    `(other)`, which the control plane refuses (a tool is named on tools/call rows only), and with it the whole
    report, which the gateway then dropped."""
    tally = TrafficTally(max_keys=2)
    for tool in ("a", "b", "c", "d"):
        tally.count("e1", "tools/call", tool, "success", 1.0)
    tally.count("e1", "tools/list", None, "success", 1.0)
    tally.count("e1", "no/such/method", None, "error", 1.0)
    rows = tally.take(100)
    assert {(row["method"], row["tool"], row["calls"]) for row in rows} == {
        ("tools/call", "a", 1), ("tools/call", "b", 1), ("tools/call", OTHER, 2), ("tools/list", "", 1),
        (OTHER, "", 1),
    }  # fmt: skip
    for row in rows:
        traffic._checked(row)  # raises Invalid on a row the control plane would refuse


def test_a_report_that_could_not_be_sent_is_sent_again_as_it_was_before_what_came_since() -> None:
    """The finding: rows whose report timed out were added back to the tally and sent in a new report, so a report
    the control plane had kept before its answer was lost counted twice. Now the same report goes again, with its
    id, and what came since follows in a report of its own."""
    tally = TrafficTally()
    tally.count("e1", "tools/call", "t", "success", 1.0)
    sent: list[tuple[str, int]] = []
    failing = [True]

    async def send(rows: list[dict[str, Any]], report: str) -> None:
        sent.append((report, sum(row["calls"] for row in rows)))
        if failing[0]:
            raise TimeoutError

    outbox = Outbox()
    assert asyncio.run(reporting.send_once(tally, send, outbox)) is False
    failing[0] = False
    tally.count("e1", "tools/call", "t", "success", 1.0)
    tally.count("e1", "tools/call", "t", "success", 1.0)
    assert asyncio.run(reporting.send_once(tally, send, outbox)) is True
    (first, one), (again, same), (other, two) = sent
    assert again == first and same == one == 1  # the very report, with its id
    assert other != first and two == 2 and outbox.waiting is None


def test_a_report_is_sent_when_nothing_was_counted() -> None:
    sent: list[list[dict[str, Any]]] = []

    async def send(rows: list[dict[str, Any]], report: str) -> None:
        sent.append(rows)

    assert asyncio.run(reporting.send_once(TrafficTally(), send, Outbox())) is True
    assert sent == [[]]


def test_rows_the_control_plane_refuses_are_dropped_not_sent_for_ever() -> None:
    """The finding: a batch the control plane refused (a 422) was given back, sent first again every 5 s, and
    refused again, while the counts behind it waited."""
    tally = TrafficTally()
    tally.count("e1", "tools/call", "t", "success", 1.0)
    sent: list[list[dict[str, Any]]] = []

    async def refusing(rows: list[dict[str, Any]], report: str) -> None:
        sent.append(rows)
        raise reporting.ReportRefused("HTTP 422: each row names an exposition_id")

    outbox = Outbox()
    assert asyncio.run(reporting.send_once(tally, refusing, outbox)) is True
    assert outbox.waiting is None
    assert len(tally) == 0 and len(sent) == 1
