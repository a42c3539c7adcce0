"""Refusals summarized: a flood of refused requests becomes a few audit events, not one each.

Anyone may send an exposition requests it refuses (a bad token: 401; too many: 429), as fast as they like.
Recorded one event each, they would push an organization's real events out of what the control plane keeps.
So the sink hands each refusal to `RefusalSummaries` first. Refusals alike (the same exposition, action, target,
status, reason, client, user and script) are one *kind*: the first `FIRST_AS_IS` of a kind within
`WINDOW_SECONDS` go on as they are, the rest are only counted, and when the window ends one summary event says
how many more there were and between which times (`count`, `first_time`, `last_time`); for rate limits, how many
messages they refused together (`messages`: a JSON-RPC batch's refusal counts the messages it refused).

Memory is bounded: at most `MAX_KINDS` kinds are followed at once. A refusal of a new kind beyond them is
counted in its exposition's overflow instead: one summary per exposition and action, status and reason, values
the gateway's own code names (`overflow: true`, no target, client or user: they were many).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

WINDOW_SECONDS = 60.0
FIRST_AS_IS = 3
MAX_KINDS = 1000

PER_REQUEST = ("request_id", "session_id", "duration_ms", "retry_after", "revision", "error_code", "messages")
"""What one refused request says and a summary of many cannot."""
PER_CALLER = ("target", "client", "user", "via")
"""What tells refusals of one kind apart from another's: an overflow summary mixes them."""


@dataclass(slots=True)
class _Window:
    closes: float
    """On the summaries' clock."""
    template: dict[str, Any]
    """The summary's fields: those of the kind's first refusal, less what was its own."""
    seen: int = 0
    counted: int = 0
    first_time: float = 0.0
    last_time: float = 0.0
    messages: int | None = None
    """The messages the counted refusals stood for, when they say (rate limits: 1 each, or a batch's)."""

    def count(self, event: Mapping[str, Any]) -> None:
        moment = float(event["time"])
        self.first_time = moment if self.counted == 0 else min(self.first_time, moment)
        self.last_time = max(self.last_time, moment)
        self.counted += 1
        messages = event.get("messages")
        if isinstance(messages, int) and not isinstance(messages, bool):
            self.messages = (self.messages or 0) + messages

    def summary(self) -> dict[str, Any]:
        summary = {
            **self.template,
            "time": self.last_time,
            "count": self.counted,
            "first_time": self.first_time,
            "last_time": self.last_time,
        }
        if self.messages is not None:
            summary["messages"] = self.messages
        return summary


def _kind(event: Mapping[str, Any]) -> tuple[object, ...]:
    via = event.get("via")
    made_by = (via.get("exposition_id"), via.get("tool")) if isinstance(via, Mapping) else None
    return (event.get("exposition_id"), event.get("action"), event.get("target"), event.get("status"),
            event.get("reason"), event.get("client"), event.get("user"), made_by)  # fmt: skip


def _overflow_kind(event: Mapping[str, Any]) -> tuple[object, ...]:
    return (event.get("exposition_id"), event.get("action"), event.get("status"), event.get("reason"))


def _without(event: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in event.items() if key not in names}


class RefusalSummaries:
    """Called on the event loop, by the sink only; never blocks. `clock` measures windows (monotonic seconds);
    the times a summary states are its events' own."""

    def __init__(
        self,
        window_seconds: float | None = None,
        first_as_is: int | None = None,
        max_kinds: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._window = WINDOW_SECONDS if window_seconds is None else window_seconds
        self._first_as_is = FIRST_AS_IS if first_as_is is None else first_as_is
        self._max_kinds = MAX_KINDS if max_kinds is None else max_kinds
        self._clock = clock
        # In the order their windows opened, which is the order they close: all last as long.
        self._kinds: dict[tuple[object, ...], _Window] = {}
        self._overflow: dict[tuple[object, ...], _Window] = {}

    @property
    def followed(self) -> int:
        """How many windows are open (kinds and overflows)."""
        return len(self._kinds) + len(self._overflow)

    def admit(self, event: Mapping[str, Any]) -> bool:
        """Whether the refusal `event` goes on as it is; when not, it is counted in a summary to come."""
        now = self._clock()
        kind = _kind(event)
        window = self._kinds.get(kind)
        if window is None and len(self._kinds) < self._max_kinds:
            window = self._kinds[kind] = _Window(now + self._window, _without(event, PER_REQUEST))
        if window is None:
            overflow = _overflow_kind(event)
            window = self._overflow.get(overflow)
            if window is None:
                template = {**_without(event, PER_REQUEST + PER_CALLER), "overflow": True}
                window = self._overflow[overflow] = _Window(now + self._window, template)
            window.count(event)
            return False
        window.seen += 1
        if window.seen <= self._first_as_is:
            return True
        window.count(event)
        return False

    def due(self) -> list[dict[str, Any]]:
        """The summaries of the windows that have ended (a window that counted nothing has none)."""
        now = self._clock()
        ended: list[dict[str, Any]] = []
        for windows in (self._kinds, self._overflow):
            while windows:
                kind, window = next(iter(windows.items()))
                if window.closes > now:
                    break
                del windows[kind]
                if window.counted:
                    ended.append(window.summary())
        return ended

    def end_all(self) -> list[dict[str, Any]]:
        """Every window ended now (the gateway stops): the summaries of those that counted something."""
        ended = [w.summary() for windows in (self._kinds, self._overflow) for w in windows.values() if w.counted]
        self._kinds.clear()
        self._overflow.clear()
        return ended
