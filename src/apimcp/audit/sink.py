"""Where audit events go: a JSON line each on the `apimcp.audit` logger, and a bounded queue the gateway's
follower sends to the control plane. Refusals reach the queue summarized (`audit.refusals`: the first few of a
kind as they are, then one event counting the rest of its window), so that a flood of refused requests costs the
organization's trail a few events; the log keeps every line. When the queue is full the oldest events are
dropped and counted, so nothing costs unbounded memory."""

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


class AuditSink:
    def __init__(self, max_queued: int = DEFAULT_QUEUE, refusals: RefusalSummaries | None = None) -> None:
        self._queue: deque[dict[str, Any]] = deque(maxlen=max_queued)
        self.dropped = 0
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
            self.dropped += 1
        self._queue.append(event)

    def drain(self, most: int = 1000) -> list[dict[str, Any]]:
        """Up to `most` queued events, oldest first, taken off the queue (with the summaries whose windows
        ended)."""
        self._queue_summaries(self.refusals.due())
        taken: list[dict[str, Any]] = []
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
