"""What a gateway's audit sink sends the control plane when requests are refused by the thousand: the first few of
a kind as they are, then one summary counting the rest of its window; a bounded number of kinds followed, the
rest counted per exposition; answered requests untouched; what was counted said when the gateway stops."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from apimcp.audit.events import Where, authentication_event, is_event, rate_limit_event, request_event
from apimcp.audit.refusals import FIRST_AS_IS, RefusalSummaries
from apimcp.audit.sink import AuditSink
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord

WHERE = Where("org", "exp-1", "library", "books", "1")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _sink(clock: Clock, max_kinds: int = 100) -> AuditSink:
    return AuditSink(refusals=RefusalSummaries(window_seconds=60, max_kinds=max_kinds, clock=clock))


def _bad_token(client: str = "203.0.113.9") -> dict[str, Any]:
    return authentication_event(WHERE, "invalid_api_key", 401, client, "/mcp/library")


def _tool_call(name: str) -> dict[str, Any]:
    record = RequestRecord("tools/call", name, 1, "s-1", "r1", "success", None, 2.5, RequestSource(None, "10.0.0.1"))
    return request_event(WHERE, record)


def _everything(sink: AuditSink) -> list[dict[str, Any]]:
    taken: list[dict[str, Any]] = []
    while batch := sink.drain(1000):
        taken += batch
    return taken


def test_a_flood_of_1000_refusals_becomes_a_few_events_whose_counts_add_up_to_1000() -> None:
    """Finding M4 (issue 21): each refused request was one event, so 10,000 requests with a bad token pushed every
    real event out of the organization's trail."""
    clock = Clock()
    sink = _sink(clock)
    sink.record(_tool_call("list_books"))
    for _ in range(1000):
        sink.record(_bad_token())
        clock.now += 0.01
    sink.record(_tool_call("get_book"))
    sent = _everything(sink)
    assert [e["target"] for e in sent if e["action"] == "tools/call"] == ["list_books", "get_book"]
    assert len([e for e in sent if e["action"] == "authentication"]) == FIRST_AS_IS  # the rest wait for their window

    clock.now += 60
    (summary,) = _everything(sink)
    refusals = [e for e in sent if e["action"] == "authentication"] + [summary]
    assert sum(e.get("count", 1) for e in refusals) == 1000
    assert summary["count"] == 1000 - FIRST_AS_IS
    assert (summary["status"], summary["reason"], summary["client"]) == (401, "invalid_api_key", "203.0.113.9")
    assert (summary["target"], summary["exposition_id"], summary["outcome"]) == ("/mcp/library", "exp-1", "failure")
    assert sent[FIRST_AS_IS]["time"] < summary["first_time"] <= summary["last_time"] == summary["time"]
    assert is_event(summary)


def test_a_sustained_flood_is_two_events_a_window_and_counted_in_full() -> None:
    clock = Clock()
    sink = _sink(clock)
    sent: list[dict[str, Any]] = []
    for _ in range(5 * 60):  # five windows, one refusal a second
        sink.record(_bad_token())
        clock.now += 1
        sent += sink.drain()
    sink.end_summaries()
    sent += _everything(sink)
    assert sum(e.get("count", 1) for e in sent) == 5 * 60
    assert len(sent) == 5 * (FIRST_AS_IS + 1)


def test_refusals_of_another_kind_are_told_apart() -> None:
    clock = Clock()
    sink = _sink(clock)
    for client in ("203.0.113.9", "203.0.113.10"):
        for _ in range(10):
            sink.record(_bad_token(client))
    for _ in range(10):
        sink.record(rate_limit_event(WHERE, "caller_rate_limit", 30, "203.0.113.9", "/mcp/library", "alice"))
    clock.now += 60
    summaries = [e for e in _everything(sink) if "count" in e]
    assert sorted((e["action"], e["client"], e.get("user"), e["count"]) for e in summaries) == [
        ("authentication", "203.0.113.10", None, 10 - FIRST_AS_IS),
        ("authentication", "203.0.113.9", None, 10 - FIRST_AS_IS),
        ("rate_limit", "203.0.113.9", "alice", 10 - FIRST_AS_IS),
    ]
    assert all("retry_after" not in e for e in summaries)  # one request's own, not the summary's


def test_a_summary_of_rate_limit_refusals_adds_up_the_messages_batches_had_refused() -> None:
    """A refused batch is one event saying how many of its messages were refused (issue 21, M2): a summary of many
    such events says how many messages they stood for, not the first one's."""
    clock = Clock()
    sink = _sink(clock)
    for messages in (1, 8, 8, 99, 1, 40):
        sink.record(rate_limit_event(WHERE, "caller_rate_limit", 30, "203.0.113.9", "/mcp/library", None, messages))
    clock.now += 60
    sent = _everything(sink)
    assert [e["messages"] for e in sent if "count" not in e] == [1, 8, 8]  # the first as they are
    (summary,) = [e for e in sent if "count" in e]
    assert (summary["count"], summary["messages"]) == (3, 99 + 1 + 40)
    assert is_event(summary)


def test_refusals_from_more_clients_than_followed_are_counted_per_exposition_in_bounded_memory() -> None:
    clock = Clock()
    sink = _sink(clock, max_kinds=5)
    for number in range(10_000):  # a client address each: 10,000 kinds
        sink.record(_bad_token(f"2001:db8::{number:x}"))
    assert sink.refusals.followed == 6  # five kinds and one overflow
    sent = _everything(sink)
    assert len(sent) == 5  # the first of each kind followed
    clock.now += 60
    (overflow,) = _everything(sink)
    assert overflow["count"] == 10_000 - 5 and overflow["overflow"] is True
    assert (overflow["exposition_id"], overflow["reason"], overflow["status"]) == ("exp-1", "invalid_api_key", 401)
    assert "client" not in overflow and "target" not in overflow
    assert sink.refusals.followed == 0


def test_a_tool_call_refused_for_its_scope_is_summarized_too_and_never_an_answered_one() -> None:
    clock = Clock()
    sink = _sink(clock)
    source = RequestSource(None, "10.0.0.1")
    refused = RequestRecord("tools/call", "delete_book", 1, "s-1", "r1", "refused", None, 1.0, source,
                            status=403, reason="insufficient_scope")  # fmt: skip
    for _ in range(20):
        sink.record(request_event(WHERE, refused))
        sink.record(_tool_call("list_books"))
    sink.end_summaries()
    sent = _everything(sink)
    assert len([e for e in sent if e["outcome"] == "success"]) == 20
    (summary,) = [e for e in sent if "count" in e]
    assert (summary["target"], summary["count"]) == ("delete_book", 20 - FIRST_AS_IS)
    assert "request_id" not in summary and "session_id" not in summary


def test_the_log_keeps_a_line_for_every_refusal(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    sink = _sink(Clock())
    for _ in range(50):
        sink.record(_bad_token())
    assert len([r for r in caplog.records if r.name == "apimcp.audit"]) == 50
    assert len(_everything(sink)) == FIRST_AS_IS


@pytest.mark.parametrize(
    "change",
    [
        {"count": 0},
        {"count": True},
        {"count": 2.5},
        {"count": 2**60},
        {"first_time": "yesterday"},
        {"last_time": -1},
        {"status": None},
    ],
)
def test_the_control_plane_refuses_a_summary_that_does_not_add_up(change: dict[str, Any]) -> None:
    summary = {**_bad_token(), "count": 3, "first_time": 1.0, "last_time": 2.0}
    assert is_event(summary)
    assert not is_event({**summary, **change})
