"""Elicitations waiting for a user to open their link: single use, short-lived, bounded.

A pending elicitation is created when a call needs a credential the user has not supplied; its id is the
capability in the link the user is sent (256 random bits). It records, on the server, whom the value will
belong to (the owner decided when the call was made, never by the page that completes it), for which secret,
and what an OAuth connection needs to finish (PKCE verifier, `state`, the browser's cookie nonce). Taking it
removes it: a link works once. Each owner may have a few at a time; the store holds a bounded number, of which
owners nobody authenticated (a session's: anyone may open as many sessions as they like) hold a tenth at most, so
that a flood of them lets go of their own links, never of users'.
"""

from __future__ import annotations

import secrets
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from dataclasses import dataclass, field, replace

from apimcp.state.owners import is_anonymous

DEFAULT_TTL_SECONDS = 600.0
DEFAULT_MAX_PENDING = 10_000
DEFAULT_MAX_PER_OWNER = 16
ANONYMOUS_SHARE = 10
"""Owners nobody authenticated hold at most 1/ANONYMOUS_SHARE of a store's places."""


def tier_places(max_pending: int, owner: str) -> int:
    """How many links the tier of `owner` holds (`is_anonymous`) in a store of `max_pending`."""
    return max(1, max_pending // ANONYMOUS_SHARE) if is_anonymous(owner) else max_pending


@dataclass(frozen=True, slots=True)
class Pending:
    id: str
    owner: str
    key: str
    """The secret the value is for (`organization/secret id`)."""
    exposition: str
    session_id: str | None = None
    """The session to tell when it is done (session era)."""
    expires_at: float = 0.0
    state: str | None = None
    """OAuth `state` of a connection in progress."""
    verifier: str | None = field(default=None, repr=False)
    """PKCE code verifier of a connection in progress."""
    nonce: str | None = field(default=None, repr=False)
    """Set in the browser's cookie when the connection starts; the callback must bring it back."""


def new_id() -> str:
    return secrets.token_urlsafe(32)


class PendingStore(ABC):
    @abstractmethod
    async def open(self, owner: str, key: str, exposition: str, session_id: str | None) -> Pending:
        """A pending elicitation for (owner, key): the one still waiting, or a new one."""

    @abstractmethod
    async def get(self, pending_id: str) -> Pending | None: ...

    @abstractmethod
    async def update(self, pending: Pending) -> None: ...

    @abstractmethod
    async def take(self, pending_id: str) -> Pending | None:
        """Remove and return it (None: unknown, expired or used already)."""

    @abstractmethod
    async def by_state(self, state: str) -> Pending | None: ...


class MemoryPendingStore(PendingStore):
    def __init__(
        self,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self._max = max_pending
        self._max_per_owner = max_per_owner
        self._tiers: dict[bool, OrderedDict[str, Pending]] = {False: OrderedDict(), True: OrderedDict()}
        """Users' links and anonymous ones (`is_anonymous`), each oldest first."""
        self._states: dict[str, str] = {}

    def _expire(self) -> None:
        now = time.time()
        for tier in self._tiers.values():
            while tier:
                first = next(iter(tier.values()))
                if first.expires_at > now:
                    break
                self._drop(first.id)

    def _find(self, pending_id: str) -> Pending | None:
        return self._tiers[False].get(pending_id) or self._tiers[True].get(pending_id)

    def _drop(self, pending_id: str) -> Pending | None:
        pending = self._tiers[False].pop(pending_id, None) or self._tiers[True].pop(pending_id, None)
        if pending is not None and pending.state is not None:
            self._states.pop(pending.state, None)
        return pending

    async def open(self, owner: str, key: str, exposition: str, session_id: str | None) -> Pending:
        self._expire()
        tier = self._tiers[is_anonymous(owner)]
        mine = [p for p in tier.values() if p.owner == owner]
        for waiting in mine:
            if waiting.key == key and waiting.exposition == exposition and waiting.state is None:
                if waiting.session_id != session_id:  # asked again from another session: tell that one
                    tier[waiting.id] = replace(waiting, session_id=session_id)
                return tier[waiting.id]  # asked again before the user went there: the same link
        for pending in mine[: max(0, len(mine) - self._max_per_owner + 1)]:
            self._drop(pending.id)
        while len(tier) >= tier_places(self._max, owner):
            self._drop(next(iter(tier)))
        pending = Pending(new_id(), owner, key, exposition, session_id, time.time() + self.ttl_seconds)
        tier[pending.id] = pending
        return pending

    async def get(self, pending_id: str) -> Pending | None:
        self._expire()
        return self._find(pending_id)

    def __len__(self) -> int:
        return sum(len(tier) for tier in self._tiers.values())

    async def update(self, pending: Pending) -> None:
        previous = self._find(pending.id)
        if previous is None:
            return
        if previous.state is not None:
            self._states.pop(previous.state, None)
        self._tiers[is_anonymous(previous.owner)][pending.id] = pending
        if pending.state is not None:
            self._states[pending.state] = pending.id

    async def take(self, pending_id: str) -> Pending | None:
        self._expire()
        return self._drop(pending_id)

    async def by_state(self, state: str) -> Pending | None:
        self._expire()
        pending_id = self._states.get(state)
        return self._find(pending_id) if pending_id is not None else None


def with_connection(pending: Pending) -> Pending:
    """`pending` with a fresh OAuth `state`, PKCE verifier and browser nonce (a connection starts)."""
    return replace(pending, state=new_id(), verifier=secrets.token_urlsafe(48), nonce=new_id())
