"""The session relay over Redis pub/sub: what one replica receives for a session reaches the others.

Every replica subscribes to one channel (`{prefix}relay`) and publishes there what it cannot act on itself
(a client's answer to a request another replica made, a cancellation of a request running elsewhere, a
DELETE, a notification for a GET stream held elsewhere). Messages are small and rare next to requests, so a
single channel for every endpoint costs less than tracking which replica holds what.

Pub/sub is at most once: while Redis is unreachable, what is sent is kept (up to `OUTBOX_LIMIT` messages)
and published once it is back, and what others published meanwhile is lost; the log says both. A handler
whose client answer is lost that way times out with a clear error, as if the client had not answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from typing import Any

import orjson
from redis.exceptions import RedisError

from apimcp.protocol.relay import RELAY_KINDS, LocalMembers, RelayKind, RelayMember, SessionRelay
from apimcp.state.redis_connection import RedisClient

log = logging.getLogger("apimcp.state")
OUTBOX_LIMIT = 10_000
_RETRY_SECONDS = (0.1, 0.2, 0.5, 1.0, 2.0)
_POLL_SECONDS = 1.0
_SENT_WAIT_SECONDS = 1.0
"""How long `sent()` waits for the outbox: a session copy kept elsewhere lives a second at most anyway."""


class RedisRelay(SessionRelay):
    """Members of this process and, through one Redis channel, of every replica sharing the prefix."""

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self._client = client
        self._channel = f"{prefix}relay"
        self._epoch_key = f"{prefix}epoch"
        self._epoch: bytes | None = None
        """The value of the epoch key when last connected: a Redis that comes back without it lost its data."""
        self._replica = secrets.token_hex(8)
        self._local = LocalMembers()
        self._outbox: deque[tuple[int, bytes]] = deque(maxlen=OUTBOX_LIMIT)
        """Messages not published yet, each with its number (1, 2, ...)."""
        self._dropped = 0
        self._wakeup: asyncio.Event | None = None
        self._queued = 0
        """The number of the last message put in the outbox."""
        self._published = 0
        """Every message up to this number has left (or was dropped)."""
        self._progress: asyncio.Condition | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # --- SessionRelay ------------------------------------------------------------------------------

    def join(self, endpoint: str, member: RelayMember) -> None:
        self._local.add(endpoint, member)
        self._start()

    def send(self, sender: RelayMember, endpoint: str, kind: RelayKind, session_id: str, body: bytes) -> None:
        self._local.deliver(endpoint, kind, session_id, body, sender)
        self._start()
        if len(self._outbox) == self._outbox.maxlen:
            self._dropped += 1
            self._published = max(self._published, self._outbox[0][0])  # it falls out: nobody waits for it any more
        self._queued += 1
        message = orjson.dumps([self._replica, endpoint, kind, session_id, orjson.Fragment(body)])
        self._outbox.append((self._queued, message))
        if self._wakeup is not None:
            self._wakeup.set()

    async def sent(self) -> None:
        if self._progress is None or not self._outbox:
            return
        target = self._queued
        progress = self._progress
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_SENT_WAIT_SECONDS), progress:
                await progress.wait_for(lambda: self._published >= target)

    # --- running -----------------------------------------------------------------------------------

    def _start(self) -> None:
        """Start listening and publishing in the running loop, once (nothing to do without a loop yet)."""
        if self._tasks:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        # Named here, in the serving process: workers forked from one process must not share a name.
        self._replica = secrets.token_hex(8)
        self._wakeup = asyncio.Event()
        self._progress = asyncio.Condition()
        if self._outbox:
            self._wakeup.set()
        self._tasks = [loop.create_task(self._listen()), loop.create_task(self._publish())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _listen(self) -> None:
        failures = 0
        while True:
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                await self._client.set(self._epoch_key, secrets.token_hex(8), nx=True)
                epoch: Any = await self._client.get(self._epoch_key)
                if failures:
                    self._say_what_was_lost(epoch != self._epoch)
                self._epoch = epoch
                failures = 0
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=_POLL_SECONDS)
                    if message is not None and message.get("type") == "message":
                        self._received(message["data"])
            except (RedisError, OSError) as exc:
                if not failures:
                    log.warning("session relay: lost the Redis channel (%s); reconnecting", type(exc).__name__)
                failures += 1
                await asyncio.sleep(_RETRY_SECONDS[min(failures, len(_RETRY_SECONDS)) - 1])
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call,unused-ignore]  # untyped before redis-py 8.2

    def _say_what_was_lost(self, emptied: bool) -> None:
        """Redis is back after an outage: say what the gateways lost (the epoch key is gone with the data of a
        Redis restarted without persistence, and whoever came back first set a new one)."""
        if emptied:
            log.warning(
                "state store: Redis is back but empty (restarted without persistence): sessions, users' "
                "credentials and pending elicitations kept there are lost; session-era clients get 404 and "
                "initialize again, users supply their credentials again"
            )
        else:
            log.warning("state store: Redis is back with its data; sessions and users' credentials carry on")
        log.warning(
            "session relay: what replicas relayed during the outage (clients' answers, cancellations) was lost; "
            "handlers waiting for it time out"
        )

    async def _publish(self) -> None:
        assert self._wakeup is not None
        assert self._progress is not None
        failures = 0
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._outbox:
                if self._dropped:
                    log.warning("session relay: %d messages dropped while Redis was unreachable", self._dropped)
                    self._dropped = 0
                try:
                    number, message = self._outbox[0]
                    await self._client.publish(self._channel, message)
                except (RedisError, OSError) as exc:
                    if not failures:
                        log.warning("session relay: cannot publish (%s); keeping messages", type(exc).__name__)
                    failures += 1
                    await asyncio.sleep(_RETRY_SECONDS[min(failures, len(_RETRY_SECONDS)) - 1])
                    continue
                failures = 0
                if self._outbox and self._outbox[0][0] == number:  # unless it fell out meanwhile (a full outbox)
                    self._outbox.popleft()
                self._published = max(self._published, number)
                async with self._progress:
                    self._progress.notify_all()

    def _received(self, data: Any) -> None:
        try:
            replica, endpoint, kind, session_id, body = orjson.loads(data)
        except (orjson.JSONDecodeError, TypeError, ValueError):
            log.warning("session relay: ignored a malformed message on %s", self._channel)
            return
        if replica == self._replica or kind not in RELAY_KINDS:
            return
        if not isinstance(endpoint, str) or not isinstance(session_id, str):
            return
        self._local.deliver(endpoint, kind, session_id, orjson.dumps(body))
