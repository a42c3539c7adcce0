"""State a gateway keeps between requests, behind interfaces a shared store (Redis) can implement too:
values users supplied for their backend credentials, the elicitations waiting for them, and rate limits
token buckets."""

from __future__ import annotations

from dataclasses import dataclass, field

from apimcp.ratelimit.buckets import BucketStore, MemoryBuckets
from apimcp.state.pending import MemoryPendingStore, PendingStore
from apimcp.state.user_values import MemoryUserValueStore, UserValueStore


@dataclass(frozen=True, slots=True)
class GatewayState:
    """The stores of one gateway (or of every replica sharing them)."""

    user_values: UserValueStore = field(default_factory=MemoryUserValueStore)
    pending: PendingStore = field(default_factory=MemoryPendingStore)
    buckets: BucketStore = field(default_factory=MemoryBuckets)
    """Where rate limits count requests."""
