"""Name lookups are bounded: a guarded fetch waits for its lookup only until its deadline, and the policy resolver
of aiohttp sessions resolves on a small pool of its own, so slow name servers starve nothing else. The slow
resolvers here are injected: nothing is resolved or connected to."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import threading
from collections.abc import Iterator

import pytest

from apimcp.safety.addresses import ANYTHING_BUT_METADATA, IPAddress
from apimcp.safety.fetch import Fetcher, FetchFailed, FetchLimits
from apimcp.safety.resolver import LOOKUP_THREADS, PolicyResolver
from tests.support.fetching import forbid_connections


class SlowResolver:
    """Answers only once released (or after 10 s), counting the lookups running at once and those answered."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.running = 0
        self.most = 0
        self.answered = 0
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> list[IPAddress]:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self.released.wait(10)
            return [ipaddress.ip_address("93.184.215.14")]
        finally:
            with self._lock:
                self.running -= 1
                self.answered += 1


@pytest.fixture
def slow() -> Iterator[SlowResolver]:
    resolver = SlowResolver()
    try:
        yield resolver
    finally:
        resolver.released.set()  # the pools' threads end with the test


def test_dns_resolution_is_outside_the_fetch_deadline(slow: SlowResolver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding: getaddrinfo had no time bound, so a slow name server extended a fetch past its deadline."""
    forbid_connections(monkeypatch)
    fetcher = Fetcher(limits=FetchLimits(timeout_seconds=0.3), resolve=slow)
    with pytest.raises(FetchFailed) as caught:
        fetcher.get("http://slow.example/openapi.yaml")
    assert slow.answered == 0  # it ended at its deadline, not when the lookup answered
    assert str(caught.value) == (
        "no complete answer from slow.example:80 within 0.3 s (the name does not resolve, the connection failed, "
        "or the answer was too slow)"
    )


def test_dns_resolution_is_outside_the_fetch_deadline_even_with_every_lookup_thread_taken(
    slow: SlowResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_connections(monkeypatch)
    fetcher = Fetcher(limits=FetchLimits(timeout_seconds=0.3), resolve=slow)
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as callers:
        attempts = [callers.submit(fetcher.get, f"http://slow{n}.example/") for n in range(12)]
        failures = [future.exception(timeout=5) for future in attempts]
    assert all(isinstance(failure, FetchFailed) for failure in failures), failures
    assert slow.answered == 0  # each fetch ended at its deadline, queued lookups included: none waited for one


def test_policy_resolver_lookups_cannot_starve_the_default_executor(slow: SlowResolver) -> None:
    """Finding: the resolver's lookups ran on the loop's default executor, which slow lookups could fill."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        default = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        loop.set_default_executor(default)
        resolver = PolicyResolver(ANYTHING_BUT_METADATA, slow)
        lookups = [asyncio.ensure_future(resolver.resolve(f"slow{n}.example", 443)) for n in range(3 * LOOKUP_THREADS)]
        for _ in range(500):  # until every lookup thread is taken
            if slow.running >= LOOKUP_THREADS:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # (time for more to start, were the pool not bounded)
        assert slow.most == LOOKUP_THREADS  # the others wait their turn on the lookup pool
        assert await asyncio.wait_for(loop.run_in_executor(None, lambda: 42), 5) == 42  # well before the 10 s
        lookups[-1].cancel()  # a lookup still queued is dropped with its caller
        slow.released.set()
        answers = await asyncio.gather(*lookups[:-1])
        assert {answer[0]["host"] for answer in answers} == {"93.184.215.14"}

    asyncio.run(scenario())
