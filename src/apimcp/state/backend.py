"""Choosing where state lives: this process's memory (the default, for one process), or a shared Redis.

`APIMCP_STATE_URL` (or `--state-url`) names the Redis; `APIMCP_STATE_KEY` (32 bytes, base64) seals users'
values at rest and must be the same on every replica, so it is required with a shared store;
`APIMCP_STATE_PREFIX` starts every key (default `apimcp:`).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from apimcp.protocol.event_store import EventStore, MemoryEventStore
from apimcp.protocol.relay import NO_RELAY, SessionRelay
from apimcp.protocol.request_state import MemoryUsedStates, UsedStates
from apimcp.protocol.sessions import MemorySessionStore, SessionLimits, SessionStore
from apimcp.protocol.tasks.limits import TaskLimits
from apimcp.protocol.tasks.store import MemoryTaskStore, TaskStore
from apimcp.state import GatewayState
from apimcp.state.pending import MemoryPendingStore
from apimcp.state.redis_buckets import RedisBuckets
from apimcp.state.redis_connection import DEFAULT_PREFIX, StateTarget, StateUrlError, connect
from apimcp.state.redis_events import RedisEventStore
from apimcp.state.redis_relay import RedisRelay
from apimcp.state.redis_sessions import RedisSessionStore
from apimcp.state.redis_tasks import RedisTaskStore
from apimcp.state.redis_used_states import RedisUsedStates
from apimcp.state.redis_values import RedisPendingStore, RedisUserValueStore
from apimcp.state.sealed import ValueSealer
from apimcp.state.user_values import MemoryUserValueStore

URL_VARIABLE = "APIMCP_STATE_URL"
KEY_VARIABLE = "APIMCP_STATE_KEY"
PREFIX_VARIABLE = "APIMCP_STATE_PREFIX"


@dataclass(frozen=True, slots=True)
class StateConfig:
    url: str | None = None
    key: bytes | None = None
    prefix: str = DEFAULT_PREFIX

    @classmethod
    def from_environment(cls, url: str | None = None, environ: Mapping[str, str] | None = None) -> StateConfig:
        """The configuration the environment gives; `url` (a command's option) wins over the variable."""
        environ = os.environ if environ is None else environ
        raw_key = environ.get(KEY_VARIABLE, "").strip()
        key = None
        if raw_key:
            try:
                key = base64.b64decode(raw_key + "=" * (-len(raw_key) % 4), altchars=b"-_", validate=False)
            except (binascii.Error, ValueError):
                raise StateUrlError(f"{KEY_VARIABLE} is base64 (32 bytes)") from None
            if len(key) != 32:
                raise StateUrlError(f"{KEY_VARIABLE} holds {len(key)} bytes; it needs 32 (base64)")
        return cls(url or environ.get(URL_VARIABLE) or None, key, environ.get(PREFIX_VARIABLE) or DEFAULT_PREFIX)


@dataclass(frozen=True, slots=True)
class OpenedState:
    """Where a process keeps sessions and users' values, and how it reaches the replicas that share them."""

    sessions: SessionStore
    stores: GatewayState
    relay: SessionRelay = NO_RELAY
    events: EventStore = field(default_factory=MemoryEventStore)
    """Where streams' events wait for clients that resume."""
    tasks: TaskStore = field(default_factory=MemoryTaskStore)
    """Where tasks live, so that any replica answers for them."""
    used_states: UsedStates = field(default_factory=MemoryUsedStates)
    """The 2026-07-28 `requestState` values opened already, so that none opens twice on any replica."""


def open_state(config: StateConfig, limits: SessionLimits, tasks: TaskLimits | None = None) -> OpenedState:
    """The session store, the users' stores and the relay the configuration names (tasks within `tasks`)."""
    if config.url is None:
        sealer = ValueSealer(config.key)
        return OpenedState(
            MemorySessionStore.with_limits(limits),
            GatewayState(MemoryUserValueStore(sealer), MemoryPendingStore()),
            tasks=MemoryTaskStore(tasks),
        )
    if config.key is None:
        raise StateUrlError(
            f"a shared state ({URL_VARIABLE}) needs {KEY_VARIABLE}: 32 random bytes, base64, the same on every "
            "replica (they seal users' credentials at rest)"
        )
    client = connect(StateTarget(config.url, config.prefix))
    sealer = ValueSealer(config.key)
    stores = GatewayState(
        RedisUserValueStore(client, sealer, config.prefix),
        RedisPendingStore(client, config.prefix),
        RedisBuckets(client, config.prefix),
    )
    return OpenedState(
        RedisSessionStore.with_limits(client, config.prefix, limits),
        stores,
        RedisRelay(client, config.prefix),
        RedisEventStore(client, config.prefix),
        RedisTaskStore(client, config.prefix, limits=tasks),
        RedisUsedStates(client, config.prefix),
    )
