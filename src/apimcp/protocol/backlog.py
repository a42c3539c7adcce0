"""What a session's GET stream missed while none was open, kept until one opens or the session ends.

Two kinds of things are missed. A change of an endpoint's lists (tools, prompts, resources) or of a resource
reaches the GET streams open on the replica where it happens; for sessions without one, the endpoint's *change
marks* say when each thing last changed, and the next stream a session opens hears of every change made after
its previous stream ended (one notification per thing: a client needs one tools/list_changed, not 50).
A notification for one session (an elicitation completed) goes to its stream wherever that is open; with none
open on any replica it is *parked* for the session, a few at most, each kept once.

So a store keeps, per session: when its last GET stream ended (`heard`), which stream is open (a holder and a
lease the stream renews at each tick, so that one whose replica died stops counting), and what is parked, for
`keep_seconds` after the last of these; per endpoint, the newest `max_marks` change marks (marks forgotten
beyond that make every change count as made). Times are seconds since the epoch: replicas compare them.
`MemoryBacklog` serves one process; `apimcp.state.redis_backlog` replicas.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_MAX_PARKED = 32
DEFAULT_MAX_MARKS = 1_000


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a session's new GET stream takes over."""

    heard: float | None
    """When the session's previous GET stream ended; None when it had none (or that was forgotten)."""
    parked: list[bytes]
    """Notifications parked for the session, oldest first (JSON)."""


@dataclass(frozen=True, slots=True)
class Marks:
    changed: frozenset[str]
    """What changed after the time asked about: `tools`, `prompts`, `resources`, `resource:<uri>`."""
    overflowed: bool
    """Marks of that time were forgotten (more than `max_marks` since): take everything as changed."""


class Backlog(ABC):
    @abstractmethod
    async def mark(self, endpoint: str, change: str) -> None:
        """Note that `change` happened now on `endpoint`."""

    @abstractmethod
    async def marks_since(self, endpoint: str, since: float) -> Marks:
        """What changed on `endpoint` after `since`."""

    @abstractmethod
    async def claim(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> Claimed:
        """A GET stream (`holder`) opens for the session: from now on nothing is parked for it, and it takes what
        was (atomically: a notification is either parked and taken here, or refused and sent to the stream)."""

    @abstractmethod
    async def renew(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> None:
        """The stream is still open (unless another one of the session took over since)."""

    @abstractmethod
    async def release(self, session_id: str, holder: str, keep_seconds: float) -> None:
        """The stream ended now: what happens from now on is kept for the session's next one."""

    @abstractmethod
    async def park(self, session_id: str, message: bytes, keep_seconds: float, most: int) -> bool:
        """Keep a notification for the session (once: one already parked is not parked twice; at most `most`, the
        oldest dropped first); False when a stream of the session is open (send it there instead)."""

    @abstractmethod
    async def forget(self, session_id: str) -> None:
        """The session ended: drop what is kept for it."""


@dataclass(slots=True)
class _Box:
    heard: float | None = None
    holder: str | None = None
    until: float = 0.0
    parked: list[bytes] = field(default_factory=list)
    expires: float = 0.0


class MemoryBacklog(Backlog):
    """Sessions' backlogs in this process, at most `max_sessions` (the least recently used forgotten first)."""

    def __init__(
        self,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_marks: int = DEFAULT_MAX_MARKS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_sessions <= 0 or max_marks <= 0:
            raise ValueError("backlog limits must be positive")
        self._max_sessions = max_sessions
        self._max_marks = max_marks
        self._clock = clock
        self._boxes: OrderedDict[str, _Box] = OrderedDict()
        self._marks: dict[str, dict[str, float]] = {}
        self._forgotten: dict[str, float] = {}
        """Per endpoint, the newest of the marks dropped beyond `max_marks`."""

    def __len__(self) -> int:
        return len(self._boxes)

    async def mark(self, endpoint: str, change: str) -> None:
        marks = self._marks.setdefault(endpoint, {})
        marks[change] = max(marks.get(change, 0.0), self._clock())
        if len(marks) > self._max_marks:
            oldest = min(marks, key=marks.__getitem__)
            self._forgotten[endpoint] = max(self._forgotten.get(endpoint, 0.0), marks.pop(oldest))

    async def marks_since(self, endpoint: str, since: float) -> Marks:
        changed = frozenset(c for c, at in self._marks.get(endpoint, {}).items() if at > since)
        return Marks(changed, self._forgotten.get(endpoint, 0.0) > since)

    def _box(self, session_id: str, keep_seconds: float) -> _Box:
        """The session's box (a new one if it had none or it expired), kept `keep_seconds` from now."""
        now = self._clock()
        box = self._boxes.get(session_id)
        if box is None or box.expires <= now:
            box = self._boxes[session_id] = _Box()
            while len(self._boxes) > self._max_sessions:
                self._boxes.popitem(last=False)
        self._boxes.move_to_end(session_id)
        box.expires = now + keep_seconds
        return box

    async def claim(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> Claimed:
        box = self._box(session_id, keep_seconds)
        box.holder, box.until = holder, self._clock() + lease_seconds
        parked, box.parked = box.parked, []
        return Claimed(box.heard, parked)

    async def renew(self, session_id: str, holder: str, lease_seconds: float, keep_seconds: float) -> None:
        box = self._box(session_id, keep_seconds)
        if box.holder == holder:
            box.until = self._clock() + lease_seconds

    async def release(self, session_id: str, holder: str, keep_seconds: float) -> None:
        box = self._box(session_id, keep_seconds)
        if box.holder == holder:
            box.holder, box.until = None, 0.0
        box.heard = max(box.heard or 0.0, self._clock())

    async def park(self, session_id: str, message: bytes, keep_seconds: float, most: int) -> bool:
        box = self._box(session_id, keep_seconds)
        if box.until > self._clock():
            return False
        if message not in box.parked:
            box.parked.append(message)
            del box.parked[:-most]
        return True

    async def forget(self, session_id: str) -> None:
        self._boxes.pop(session_id, None)
