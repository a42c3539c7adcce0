"""What one replica receives for a session that another replica is serving.

Session records are shared (a Redis store), but what is alive is not: the handler waiting for the
client's answer to an elicitation, the task a `notifications/cancelled` must stop, the GET stream a
notification is for. Behind a load balancer with no stickiness, the client's next POST may reach any
replica; when the replica that receives something has nobody waiting for it, it hands it to the relay,
which delivers it to every other member serving the same endpoint (the one concerned acts, the others
find nothing and ignore it).

`NO_RELAY` is the default for one process. `MemoryRelay` joins endpoints of one process (tests run two
"replicas" on one store with it); a shared relay (Redis pub/sub, `apimcp.state.redis_relay`) joins
processes. The engine knows only this interface.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from typing import Literal, Protocol

RelayKind = Literal["answer", "cancel", "ended", "notify"]
"""`answer`: a client's response to a server-to-client request; `cancel`: `notifications/cancelled`;
`ended`: the session was deleted; `notify`: a notification for the session's GET stream."""
RELAY_KINDS: frozenset[str] = frozenset(("answer", "cancel", "ended", "notify"))


class RelayMember(Protocol):
    """An endpoint's session era, as the relay sees it."""

    def relayed(self, kind: RelayKind, session_id: str, body: bytes) -> None:
        """Act on something another member received (`body` is JSON), if it concerns this one."""


class SessionRelay(ABC):
    """Carries messages for sessions between the members serving one endpoint."""

    @abstractmethod
    def join(self, endpoint: str, member: RelayMember) -> None:
        """Deliver to `member` what others send for `endpoint` (held weakly: a dropped endpoint leaves)."""

    @abstractmethod
    def send(self, sender: RelayMember, endpoint: str, kind: RelayKind, session_id: str, body: bytes) -> None:
        """Hand `body` to every other member of `endpoint`; never blocks, never raises."""

    async def sent(self) -> None:  # noqa: B027 - relays that deliver as they send have nothing to wait for
        """Return once what was sent so far has left this process (bounded; never raises): a DELETE is answered
        only when the other replicas can already know the session is gone."""

    @property
    def shared(self) -> bool:
        """Whether other members may exist (so a missing local listener is not the end of the story)."""
        return True


class _NoRelay(SessionRelay):
    def join(self, endpoint: str, member: RelayMember) -> None:
        pass

    def send(self, sender: RelayMember, endpoint: str, kind: RelayKind, session_id: str, body: bytes) -> None:
        pass

    @property
    def shared(self) -> bool:
        return False


NO_RELAY: SessionRelay = _NoRelay()


class LocalMembers:
    """Members of this process, by endpoint, held weakly; shared relays deliver through it too."""

    def __init__(self) -> None:
        self._members: dict[str, weakref.WeakSet[RelayMember]] = {}

    def add(self, endpoint: str, member: RelayMember) -> None:
        self._members.setdefault(endpoint, weakref.WeakSet()).add(member)

    def deliver(
        self, endpoint: str, kind: RelayKind, session_id: str, body: bytes, sender: RelayMember | None = None
    ) -> None:
        members = self._members.get(endpoint)
        if members is None:
            return
        if not members:
            del self._members[endpoint]
            return
        for member in list(members):
            if member is not sender:
                member.relayed(kind, session_id, body)


class MemoryRelay(SessionRelay):
    """Members in one process: each message is delivered synchronously to the endpoint's other members."""

    def __init__(self) -> None:
        self._local = LocalMembers()

    def join(self, endpoint: str, member: RelayMember) -> None:
        self._local.add(endpoint, member)

    def send(self, sender: RelayMember, endpoint: str, kind: RelayKind, session_id: str, body: bytes) -> None:
        self._local.deliver(endpoint, kind, session_id, body, sender)
