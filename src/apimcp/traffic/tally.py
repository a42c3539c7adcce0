"""One gateway process's counts of requests by exposition, method, tool and minute, until they are reported.

Counting is a dictionary lookup and a few additions on the event loop. The tally is bounded whatever the traffic:
past `MAX_KEYS` keys, a call of a tool not yet counted in its minute is counted as a call of `OTHER`, so a flood
of calls naming made-up tools costs one key per exposition and minute (methods are counted by name only when
known: a few keys at most).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from apimcp.traffic.histogram import bucket_of, empty

MAX_KEYS = 5000
OTHER = "(other)"
DOOR = "(door)"
"""The method of requests the exposition's door refused (401, 403, 429) before any JSON-RPC was read."""
METHODS = frozenset({
    "initialize", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "completion/complete", "logging/setLevel", "tasks/get", "tasks/list", "tasks/result", "tasks/cancel",
    "server/discover", DOOR,
})  # fmt: skip
"""Methods counted by name; any other a client sends is counted as `OTHER`."""

Key = tuple[str, str, str, int]
"""Exposition id, method, tool (empty but for `tools/call`), minute (epoch seconds, a multiple of 60)."""


@dataclass(slots=True)
class Counts:
    calls: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    latency: list[int] = field(default_factory=empty)
    backend: list[int] = field(default_factory=empty)


class TrafficTally:
    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self._counts: dict[Key, Counts] = {}
        self._max_keys = max_keys

    def __len__(self) -> int:
        return len(self._counts)

    def count(
        self,
        exposition_id: str,
        method: str,
        tool: str | None,
        outcome: str,
        milliseconds: float | None,
        backend_milliseconds: float | None = None,
        times: int = 1,
    ) -> None:
        """`times` requests answered alike: `outcome` as `protocol.observe.Outcome`, or `refused` or `limited` at
        the door; `milliseconds` None for those refused at the door (no time of theirs belongs in the latencies: a
        flood of refusals would drag them to 0), `backend_milliseconds` None when they called no backend."""
        if method not in METHODS:
            method, tool = OTHER, None
        minute = int(time.time()) // 60 * 60
        key = (exposition_id, method, (tool or "")[:200] if method == "tools/call" else "", minute)
        counts = self._counts.get(key)
        if counts is None:
            if len(self._counts) >= self._max_keys:
                # the method stays (a known one: a few keys an exposition and minute at most); the tool does not
                key = (exposition_id, method, OTHER if method == "tools/call" else "", minute)
                counts = self._counts.get(key)
            if counts is None:
                counts = self._counts[key] = Counts()
        counts.calls += times
        if outcome != "success":
            counts.outcomes[outcome] = counts.outcomes.get(outcome, 0) + times
        if milliseconds is not None:
            counts.latency[bucket_of(milliseconds)] += times
        if backend_milliseconds is not None:
            counts.backend[bucket_of(backend_milliseconds)] += times

    def take(self, most: int) -> list[dict[str, Any]]:
        """Up to `most` counts as report rows, oldest minutes first, taken off the tally."""
        keys = sorted(self._counts, key=lambda key: key[3])[:most]
        return [_row(key, self._counts.pop(key)) for key in keys]


def _row(key: Key, counts: Counts) -> dict[str, Any]:
    exposition_id, method, tool, minute = key
    return {
        "exposition_id": exposition_id,
        "method": method,
        "tool": tool,
        "start": minute,
        "calls": counts.calls,
        "outcomes": counts.outcomes,
        "latency": counts.latency,
        "backend": counts.backend,
    }
