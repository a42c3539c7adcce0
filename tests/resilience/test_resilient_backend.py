"""Retries, the circuit breaker and failover around a backend: idempotent calls that fail transiently are tried
again after jittered backoff within a budget, others once; a backend that keeps failing is refused at once until
a probe finds it back; a call moves to the next URL when the one before cannot be reached (or, idempotent, fails
transiently); settings are refused with a clear message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, JsonBody, Progress
from apimcp.catalog.model import McpBinding, Operation, RestBinding, ToolHints
from apimcp.resilience.backend import ResilientBackend
from apimcp.resilience.breaker import CircuitBreaker
from apimcp.resilience.failover import FailoverBackend
from apimcp.resilience.retries import RetryBudget, backoff
from apimcp.resilience.settings import Breaker, ResilienceError, Retries, parse_resilience
from tests.resilience.scripted import Scripted

pytestmark = pytest.mark.anyio

DOWN = Failure("Could not connect to the backend", transient=True)
BUSY = Failure("HTTP 503 Service Unavailable", 503, transient=True)
NOT_FOUND = Failure("HTTP 404 Not Found", 404)
OK = JsonBody({"ok": True}, '{"ok":true}')


def _operation(method: str) -> Operation:
    idempotent = method in ("GET", "HEAD", "PUT", "DELETE")
    binding = RestBinding(method=method, path="/items")
    return Operation(f"{method.lower()}_item", {"type": "object"}, binding, hints=ToolHints(idempotent=idempotent))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _resilient(inner: Backend, raw: Mapping[str, Any]) -> tuple[ResilientBackend, list[float], list[str]]:
    waits: list[float] = []
    events: list[str] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    backend = ResilientBackend(inner, parse_resilience(raw), "test", lambda e, t: events.append(e), sleep)
    return backend, waits, events


async def test_an_idempotent_call_is_tried_again_after_jittered_backoff() -> None:
    inner = Scripted([DOWN, BUSY, OK])
    backend, waits, events = _resilient(inner, {"retries": {"attempts": 3, "backoff_ms": 100, "max_backoff_ms": 150}})
    assert await backend.call(_operation("GET"), {}) == OK
    assert inner.calls == 3 and events == ["retry", "retry"]
    assert 0 <= waits[0] <= 0.1 and 0 <= waits[1] <= 0.15  # full jitter below the bound, capped


async def test_a_call_that_is_not_idempotent_or_fails_for_good_is_made_once() -> None:
    for operation, results in ((_operation("POST"), [DOWN, OK]), (_operation("GET"), [NOT_FOUND, OK])):
        inner = Scripted(results)
        backend, _, events = _resilient(inner, {"retries": True})
        assert await backend.call(operation, {}) == results[0]
        assert inner.calls == 1 and events == []
    mcp = Operation(tool_name="t", input_schema={}, binding=McpBinding(name="t"), hints=ToolHints(idempotent=True))
    inner = Scripted([DOWN, OK])
    backend, _, _ = _resilient(inner, {"retries": True})
    assert await backend.call(mcp, {}) == DOWN and inner.calls == 1  # an MCP server's hints are its own word


class _Streaming(Scripted):
    """Tells progress 1, 2, ... up to its attempt's number plus one, then answers as scripted."""

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        for step in range(1, self.calls + 3):
            assert progress is not None
            await progress(float(step), None, None)
        return await super().call(operation, arguments, progress, extras)


async def test_a_call_tried_again_never_tells_progress_backwards() -> None:
    """The finding: a stream tried again counted its progress from the start under the same token: 1, 2, 1, 2, 3
    (MCP's progress only ever increases)."""
    told: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        told.append(value)

    backend, _, _ = _resilient(_Streaming([DOWN, OK]), {"retries": {"attempts": 2}})
    assert await backend.call(_operation("GET"), {}, progress) == OK
    assert told == [1.0, 2.0, 3.0]


async def test_a_call_moved_to_another_url_never_tells_progress_backwards() -> None:
    told: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        told.append(value)

    failover = FailoverBackend([_Streaming([DOWN]), _Streaming([DOWN]), _Streaming([OK])], lambda e, t: None)
    assert await failover.call(_operation("GET"), {}, progress) == OK
    assert told == [1.0, 2.0]


async def test_attempts_end_and_the_last_failure_is_answered() -> None:
    inner = Scripted([DOWN])
    backend, _, _ = _resilient(inner, {"retries": {"attempts": 2}})
    assert await backend.call(_operation("GET"), {}) == DOWN
    assert inner.calls == 2


async def test_the_budget_keeps_a_failing_backend_from_getting_a_multiple_of_its_traffic() -> None:
    inner = Scripted([DOWN])
    backend, _, events = _resilient(inner, {"retries": {"attempts": 3, "budget_percent": 10}})
    for _ in range(100):
        await backend.call(_operation("GET"), {})
    retries = events.count("retry")
    assert 10 <= retries <= 10 + 100 * 0.1 + 1  # the spare ten, then one in ten calls
    assert inner.calls == 100 + retries


class _SlowToFail(Scripted):
    """Fails each call after `seconds` of a clock it moves (a backend that answers nothing until the timeout)."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__([DOWN])
        self.clock, self.seconds = clock, seconds

    async def call(self, *args: Any, **kwargs: Any) -> Any:
        self.clock.now += self.seconds
        return await super().call(*args, **kwargs)


async def test_no_retry_starts_after_the_deadline() -> None:
    clock = Clock()
    inner = _SlowToFail(clock, 20.0)  # a 20 s timeout each try
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        clock.now += seconds

    settings = parse_resilience({"retries": {"attempts": 5, "backoff_ms": 100}})  # deadline_ms: 30000 by default
    backend = ResilientBackend(inner, settings, "test", sleep=sleep, clock=clock)
    assert await backend.call(_operation("GET"), {}) == DOWN
    assert inner.calls == 2 and len(waits) == 1  # the third try would start 40 s after the first
    inner, waits[:] = _SlowToFail(clock, 0.01), []
    settings = parse_resilience({"retries": {"attempts": 5, "backoff_ms": 1000, "deadline_ms": 2500}})
    backend = ResilientBackend(inner, settings, "test", sleep=sleep, clock=clock)
    await backend.call(_operation("GET"), {})
    assert sum(waits) + 0.01 * inner.calls <= 2.5 + 0.01  # each wait ends before the deadline


def test_backoff_doubles_to_its_cap() -> None:
    settings = Retries(backoff_ms=100, max_backoff_ms=1000)
    assert [backoff(settings, n, draw=1.0) for n in (1, 2, 3, 4, 5, 40)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    budget = RetryBudget(Retries(budget_percent=0))
    assert sum(budget.spend() for _ in range(20)) == 10


def test_the_breaker_opens_fails_fast_lets_one_probe_through_and_closes() -> None:
    clock = Clock()
    breaker = CircuitBreaker(Breaker(failures=3, open_seconds=10), clock)
    assert [breaker.admit() for _ in range(3)] == ["call"] * 3
    assert [breaker.failed(False) for _ in range(3)] == [False, False, True]
    assert breaker.state == "open" and breaker.admit() == 10
    clock.now += 10
    assert breaker.state == "half_open"
    assert breaker.admit() == "probe"
    assert breaker.admit() == 1.0  # one at a time
    assert breaker.failed(True) is True and breaker.state == "open"  # the probe failed: open again
    clock.now += 10
    assert breaker.admit() == "probe"
    assert breaker.succeeded(True) is True
    assert breaker.state == "closed" and breaker.admit() == "call"


def test_while_the_breaker_is_open_only_the_probe_tells() -> None:
    """A call let through before the breaker opened, ending while it is open, neither closes it nor frees the
    probe's place."""
    clock = Clock()
    breaker = CircuitBreaker(Breaker(failures=1, open_seconds=10), clock)
    assert breaker.admit() == "call"  # a slow call, sent while closed
    assert breaker.admit() == "call" and breaker.failed(False) is True  # another fails: open
    assert breaker.succeeded(False) is False and breaker.state == "open"  # the slow one answers late
    clock.now += 10
    assert breaker.admit() == "probe"
    breaker.released(False)  # a straggler cancelled
    breaker.failed(False)  # another fails late
    assert breaker.admit() == 1.0 and breaker.state == "half_open"  # the probe still runs: no second one
    breaker.released(True)  # the probe cancelled: another may go
    assert breaker.admit() == "probe"


async def test_an_open_breaker_answers_at_once_and_a_probe_closes_it() -> None:
    clock = Clock()
    inner = Scripted([DOWN, DOWN, NOT_FOUND])
    backend, _, events = _resilient(inner, {"breaker": {"failures": 2, "open_seconds": 5}})
    backend.breaker = CircuitBreaker(Breaker(failures=2, open_seconds=5), clock)
    await backend.call(_operation("POST"), {})
    await backend.call(_operation("POST"), {})
    refused = await backend.call(_operation("POST"), {})
    assert isinstance(refused, Failure) and refused.status == 503 and not refused.transient
    assert refused.message == "The backend is failing: calls to it are refused for 5 s more (circuit open)"
    assert inner.calls == 2
    clock.now += 5
    assert await backend.call(_operation("POST"), {}) == NOT_FOUND  # the backend answers: it is up
    assert events == ["breaker_open", "refused", "breaker_closed"]
    assert backend.breaker is not None and backend.breaker.state == "closed"


async def test_a_backend_never_reached_opens_the_breaker_as_one_that_fails() -> None:
    """A name that does not resolve, or a TLS handshake refused, is no healthy backend: failover must learn to
    skip it, not try it first on every call."""
    unresolved = Failure("Could not resolve the backend host 'gone.invalid'", unsent=True)
    inner = Scripted([unresolved, unresolved, NOT_FOUND])
    backend, _, events = _resilient(inner, {"breaker": {"failures": 2, "open_seconds": 5}})
    backend.breaker = CircuitBreaker(Breaker(failures=2, open_seconds=5), Clock())
    assert [await backend.call(_operation("GET"), {}) for _ in range(2)] == [unresolved, unresolved]
    refused = await backend.call(_operation("GET"), {})
    assert isinstance(refused, Failure) and refused.status == 503 and inner.calls == 2
    assert events == ["breaker_open", "refused"]


async def test_a_call_that_failed_before_reaching_the_backend_tells_the_breaker_nothing() -> None:
    """The finding: a failure of the gateway's own (arguments, credentials) counted as the backend answering, so a
    probe of that kind closed the breaker of a backend still down, and such failures reset its count of failures."""
    clock = Clock()
    invalid = Failure("Invalid arguments: itemId: a control character (LF)", local=True)
    inner = Scripted([DOWN, invalid, DOWN, DOWN, invalid, DOWN])
    backend, _, events = _resilient(inner, {"breaker": {"failures": 3, "open_seconds": 5}})
    backend.breaker = CircuitBreaker(Breaker(failures=3, open_seconds=5), clock)
    assert [await backend.call(_operation("POST"), {}) for _ in range(4)] == [DOWN, invalid, DOWN, DOWN]
    assert backend.breaker.state == "open"  # three failures of the backend in a row, one of the gateway's between
    clock.now += 5
    assert await backend.call(_operation("POST"), {}) == invalid  # the probe learnt nothing: another may go
    assert backend.breaker.state == "half_open"
    assert await backend.call(_operation("POST"), {}) == DOWN
    assert backend.breaker.state == "open" and events == ["breaker_open", "breaker_open"]


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("fast", "resilience is an object"),
        ({"retry": True}, "unknown key retry"),
        ({"retries": {"attempts": 0}}, "resilience.retries.attempts is from 1 to 10, not 0"),
        ({"retries": {"attempts": 2.5}}, "resilience.retries.attempts is a whole number"),
        ({"retries": {"backoff_ms": 500, "max_backoff_ms": 100}}, "max_backoff_ms is at least backoff_ms"),
        ({"retries": {"deadline_ms": 0}}, "resilience.retries.deadline_ms is from 1 to 600000, not 0"),
        ({"breaker": {"failures": True}}, "resilience.breaker.failures is a whole number"),
        ({"cache": {"tools": {"get_item": -1}}}, "'get_item' maps to seconds from 0 to 86400"),
        ({"cache": "yes"}, "resilience.cache is an object"),
    ],
)
def test_settings_that_cannot_be_used_are_refused(raw: object, says: str) -> None:
    with pytest.raises(ResilienceError) as caught:
        parse_resilience(raw)
    assert says in str(caught.value)


def test_settings_read_back_and_true_takes_the_defaults() -> None:
    settings = parse_resilience({"retries": True, "breaker": {"failures": 2}, "cache": {"tools": {"get_item": 60}}})
    assert settings.as_json() == {
        "retries": {
            "attempts": 3,
            "backoff_ms": 100,
            "max_backoff_ms": 2000,
            "budget_percent": 20,
            "deadline_ms": 30_000,
        },
        "breaker": {"failures": 2, "open_seconds": 30.0},
        "cache": {"ttl_seconds": 30.0, "tools": {"get_item": 60.0}},
    }
    assert parse_resilience(settings.as_json()) == settings
    assert not parse_resilience(None) and not parse_resilience({"retries": False})


UNSENT = Failure("Could not connect to the backend", transient=True, unsent=True)


async def test_a_call_moves_to_the_next_url_when_the_one_before_cannot_be_reached() -> None:
    events: list[str] = []
    first, second = Scripted([UNSENT]), Scripted([OK])
    failover = FailoverBackend([first, second], lambda e, t: events.append(e))
    assert await failover.call(_operation("POST"), {}) == OK  # never sent: any call may go elsewhere
    assert (first.calls, second.calls, events) == (1, 1, ["failover"])
    busy, spare = Scripted([BUSY]), Scripted([OK])
    failover = FailoverBackend([busy, spare], lambda e, t: None)
    assert await failover.call(_operation("POST"), {}) == BUSY  # sent, and not idempotent: not made twice
    assert await failover.call(_operation("GET"), {}) == OK  # idempotent: made elsewhere
    gone = FailoverBackend([Scripted([UNSENT]), Scripted([UNSENT])], lambda e, t: None)
    assert await gone.call(_operation("GET"), {}) == UNSENT


async def test_a_url_whose_breaker_is_open_is_skipped_at_once() -> None:
    clock = Clock()
    down, up = Scripted([UNSENT]), Scripted([OK])
    guarded, _, _ = _resilient(down, {"breaker": {"failures": 2, "open_seconds": 30}})
    guarded.breaker = CircuitBreaker(Breaker(failures=2, open_seconds=30), clock)
    failover = FailoverBackend([guarded, up], lambda e, t: None)
    for _ in range(5):
        assert await failover.call(_operation("POST"), {}) == OK
    assert down.calls == 2 and up.calls == 5  # after two failures the first URL is not tried any more
    clock.now += 30
    down.results = [OK]
    assert await failover.call(_operation("POST"), {}) == OK
    assert down.calls == 3 and up.calls == 5  # the probe found it back
