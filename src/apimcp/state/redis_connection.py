"""One setting names where shared state lives: a Redis (or Valkey) server, a Sentinel group, or a cluster.

- `redis://[:password@]host:port/db`, `rediss://…` (TLS), `unix:///path/redis.sock`;
- `redis+sentinel://[:password@]host:port[,host:port…]/service-name[/db]`: the service's current master,
  found through the sentinels (and found again after a failover);
- `redis+cluster://[:password@]host:port[,host:port…]`: a Redis Cluster, from any of its nodes.

The client is redis-py's asyncio client (`redis` on PyPI: the project Redis maintains, with Sentinel and
Cluster support in the same package, and typed). Every key apimcp writes starts with a prefix
(`apimcp:` by default), so several deployments, or tests, can share one server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

DEFAULT_PREFIX = "apimcp:"
CONNECT_SECONDS = 5.0
COMMAND_SECONDS = 5.0

RedisClient = Redis | RedisCluster


class StateUrlError(ValueError):
    """A state URL apimcp cannot use; the message says what is wrong with it (never its password)."""


@dataclass(frozen=True, slots=True)
class StateTarget:
    url: str
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        check_state_url(self.url)
        if not self.prefix or any(c.isspace() for c in self.prefix):
            raise StateUrlError("the state key prefix is a non-empty word (apimcp: by default)")


_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^:\[\]/]+)(?::(\d{1,5}))?$")


def _hosts(netloc: str, default_port: int) -> list[tuple[str, int]]:
    """`host[:port],host[:port]` of a sentinel or cluster URL."""
    hosts = []
    for item in netloc.rpartition("@")[2].split(","):
        found = _HOST.fullmatch(item)
        if found is None:
            raise StateUrlError(f"{item!r} is not host[:port]")
        hosts.append((found.group(1).strip("[]"), int(found.group(2) or default_port)))
    return hosts


def check_state_url(url: str) -> None:
    scheme = urlsplit(url).scheme
    if scheme not in ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster"):
        raise StateUrlError(
            "a state URL starts with redis://, rediss://, unix://, redis+sentinel:// or redis+cluster://"
        )
    if scheme in ("redis+sentinel", "redis+cluster"):
        parts = urlsplit(url)
        _hosts(parts.netloc, 26379)
        if scheme == "redis+sentinel" and not parts.path.strip("/"):
            raise StateUrlError("a redis+sentinel:// URL names its service: redis+sentinel://host:26379/mymaster")


def _retry() -> dict[str, Any]:
    """A command whose connection broke is tried again on a new one: after a Redis restart every pooled
    connection is stale, and each would otherwise fail one request. (A command that reached Redis before its
    connection broke may run twice; apimcp's writes are overwrites, or counters where a gap is harmless.)"""
    return {
        "retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), 2),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }


def connect(target: StateTarget) -> RedisClient:
    """A client of the state server (connections are opened on first use)."""
    url = target.url
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password else None
    if parts.scheme == "redis+sentinel":
        service, _, db = parts.path.strip("/").partition("/")
        sentinel = Sentinel(  # type: ignore[no-untyped-call,unused-ignore]  # untyped before redis-py 8.2
            _hosts(parts.netloc, 26379),
            sentinel_kwargs={"password": password, "socket_connect_timeout": CONNECT_SECONDS},
            password=password,
            socket_connect_timeout=CONNECT_SECONDS,
            socket_timeout=COMMAND_SECONDS,
            **_retry(),
        )
        master: Redis = sentinel.master_for(service, db=int(db or 0))
        return master
    if parts.scheme == "redis+cluster":
        nodes = [ClusterNode(host, port) for host, port in _hosts(parts.netloc, 6379)]
        return RedisCluster(
            startup_nodes=nodes,
            password=password,
            socket_connect_timeout=CONNECT_SECONDS,
            socket_timeout=COMMAND_SECONDS,
        )
    return Redis.from_url(url, socket_connect_timeout=CONNECT_SECONDS, socket_timeout=COMMAND_SECONDS, **_retry())
