"""A gateway's audit queue when the control plane is away for long: bounded, and the trail says what it lost."""

from __future__ import annotations

import pytest

from apimcp.audit.events import Where, is_event, request_event
from apimcp.audit.sink import LOST, AuditSink
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord


def _call(where: Where, number: int) -> dict[str, object]:
    record = RequestRecord("tools/call", "t", number, None, "2026-07-28", "success", None, 1.0, RequestSource())
    event = request_event(where, record)
    event["time"] = 1000.0 + number
    return event


def test_events_dropped_from_a_full_queue_are_counted_per_exposition_in_the_next_batch(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = AuditSink(max_queued=100)
    first, second = Where("org", "exp-1", "library", "books", "1"), Where("org", "exp-2", "shop", "items", "2")
    for number in range(150):
        sink.record(_call(first, number))
    for number in range(150, 250):
        sink.record(_call(second, number))
    assert caplog.text.count("the audit queue is full") == 1
    batch = sink.drain(1000)
    lost = batch[0]
    assert is_event(lost) and lost["action"] == LOST and lost["exposition_id"] == "exp-1"
    assert (lost["dropped"], lost["first_time"], lost["last_time"]) == (150, 1000.0, 1149.0)
    assert lost["organization"] == "org" and lost["exposition"] == "library"
    assert [event["request_id"] for event in batch[1:]] == [str(n) for n in range(150, 250)]  # the newest kept
    assert sink.drain(1000) == []  # told once

    for number in range(101):  # a second episode is told again
        sink.record(_call(second, number))
    assert caplog.text.count("the audit queue is full") == 2
    again = sink.drain(1)
    assert [(e["exposition_id"], e["dropped"]) for e in again] == [("exp-2", 1)]
    assert len(sink.drain(1000)) == 100
