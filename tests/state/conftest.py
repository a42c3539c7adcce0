"""The Redis server of the machine (127.0.0.1:6379, `APIMCP_TEST_REDIS` overrides), a key prefix per test."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from redis import Redis as SyncRedis

REDIS_URL = os.environ.get("APIMCP_TEST_REDIS", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A prefix no other test uses; its keys are deleted afterwards."""
    prefix = f"apimcp-test:{secrets.token_hex(6)}:"
    yield prefix
    with SyncRedis.from_url(REDIS_URL) as client:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
