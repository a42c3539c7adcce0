"""Where audit events go: a JSON line each on the `apimcp.audit` logger, and a bounded queue the gateway's
follower sends to the control plane. Refusals reach the queue summarized (`audit.refusals`: the first few of a
kind as they are, then one event counting the rest of its window), so that a flood of refused requests costs the
organization's trail a few events; the log keeps every line. When the queue is full (the control plane away for
long) the oldest events are dropped, so nothing costs unbounded memory, and counted per exposition: the next batch
sent begins with one `audit/dropped` event for each exposition that lost some (`dropped`, `first_time`,
`last_time`), so a gap in the trail says it is one."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import Any

import orjson

from apimcp.audit.events import (
    Where,
    approval_event,
    authentication_event,
    guardrail_event,
    is_refusal,
    policy_event,
    rate_limit_event,
    request_event,
)
from apimcp.audit.refusals import RefusalSummaries
from apimcp.guardrails.chain import Heard
from apimcp.protocol.caller import RequestSource
from apimcp.protocol.observe import RequestRecord

log = logging.getLogger("apimcp.audit")
DEFAULT_QUEUE = 10_000
LOST = "audit/dropped"
_WHERE = ("organization", "exposition_id", "exposition", "service", "version")


class AuditSink:
    def __init__(self, max_queued: int = DEFAULT_QUEUE, refusals: RefusalSummaries | None = None) -> None:
        self._queue: deque[dict[str, Any]] = deque(maxlen=max_queued)
        self.dropped = 0
        self._lost: dict[str, dict[str, Any]] = {}
        """Per exposition, the `audit/dropped` event telling what it lost since the last batch (as many as the
        gateway serves expositions, at most)."""
        self.refusals = refusals or RefusalSummaries()

    def record(self, event: dict[str, Any]) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info("%s", orjson.dumps(event).decode())
        self._queue_summaries(self.refusals.due())  # first: a refusal arriving as its window ends opens the next
        if not is_refusal(event) or self.refusals.admit(event):
            self._queue_up(event)

    def end_summaries(self) -> None:
        """Queue the summaries of refusals counted so far without waiting for their windows (the gateway stops)."""
        self._queue_summaries(self.refusals.end_all())

    def _queue_summaries(self, summaries: list[dict[str, Any]]) -> None:
        for summary in summaries:
            self._queue_up(summary)

    def _queue_up(self, event: dict[str, Any]) -> None:
        if len(self._queue) == self._queue.maxlen:
            self._lose(self._queue[0])
        self._queue.append(event)

    def _lose(self, event: Mapping[str, Any]) -> None:
        if not self.dropped:
            log.warning("the audit queue is full (%d events): the oldest are dropped, and the trail will count "
                        "them", self._queue.maxlen)  # fmt: skip
        self.dropped += 1
        exposition_id = str(event.get("exposition_id"))
        moment = event.get("time", 0.0)
        lost = self._lost.get(exposition_id)
        if lost is None:
            where = {key: event.get(key) for key in _WHERE}
            self._lost[exposition_id] = {"time": moment, "action": LOST, "outcome": "dropped", **where,
                                         "dropped": 1, "first_time": moment, "last_time": moment}  # fmt: skip
            return
        lost["dropped"] += 1
        lost["first_time"] = min(lost["first_time"], moment)
        lost["last_time"] = lost["time"] = max(lost["last_time"], moment)

    def drain(self, most: int = 1000) -> list[dict[str, Any]]:
        """Up to `most` queued events, oldest first, taken off the queue (with the summaries whose windows
        ended)."""
        self._queue_summaries(self.refusals.due())
        taken = list(self._lost.values())[:most]  # first: how much the trail lost goes out before anything else
        for event in taken:
            del self._lost[event["exposition_id"]]
        if not self._lost:
            self.dropped = 0
        while self._queue and len(taken) < most:
            taken.append(self._queue.popleft())
        return taken


class AuditObserver:
    """The audit trail of one exposition: hears every request the engine answered, and every call scripts made
    into the exposition."""

    __slots__ = ("_sink", "where")

    def __init__(self, sink: AuditSink, where: Where) -> None:
        self._sink = sink
        self.where = where

    def request_started(self, method: str, target: str | None, source: RequestSource) -> None:
        """Nothing to do before: an audit event says how the request ended."""

    def request_finished(self, record: RequestRecord) -> None:
        self._sink.record(request_event(self.where, record))

    def call_started(self, tool: str, source: RequestSource, via: Mapping[str, str]) -> None:
        """Nothing to do before (a call a script makes into the exposition: `gateway.calls`)."""

    def call_finished(self, record: RequestRecord, via: Mapping[str, str]) -> None:
        self._sink.record(request_event(self.where, record, via))

    def call_denied(self, tool: str, source: RequestSource, rule: str | None, via: Mapping[str, str] | None) -> None:
        self._sink.record(policy_event(self.where, tool, rule, source, via))

    def call_approval(
        self, tool: str, source: RequestSource, rule: str | None, outcome: str, via: Mapping[str, str] | None
    ) -> None:
        self._sink.record(approval_event(self.where, tool, rule, outcome, source, via))

    def call_guarded(self, tool: str, source: RequestSource, heard: Heard, via: Mapping[str, str] | None) -> None:
        self._sink.record(guardrail_event(self.where, tool, heard, source, via))

    def refused(self, reason: str, status: int, client: str | None, path: str) -> None:
        """A request the exposition's guard turned away."""
        self._sink.record(authentication_event(self.where, reason, status, client, path))

    def limited(
        self, reason: str, retry_after: int, client: str | None, path: str, user: str | None, messages: int = 1
    ) -> None:
        """A request the exposition's rate limits refused (429) before it was read: the endpoint never hears of it,
        so this is its only event; or `messages` messages of a batch, in one event."""
        self._sink.record(rate_limit_event(self.where, reason, retry_after, client, path, user, messages))
