"""The answer cache: read-only tools' answers kept for their TTL, keyed by what the backend would receive (two
users' credentials never share an answer), identical calls made once while one is in flight (a cancelled
caller does not cancel it), failures and large answers never kept, and its size bounded."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from apimcp.backends.base import Backend, BackendResult, CallExtras, Failure, JsonBody, Progress, UnparsedJson
from apimcp.backends.credentials import Placement
from apimcp.backends.graphql import graphql_answer
from apimcp.backends.rest import json_answer
from apimcp.catalog.model import Operation, RestBinding, ToolHints
from apimcp.resilience.cache import AnswerCache, call_key
from apimcp.resilience.cached import Cached
from apimcp.resilience.settings import Cache
from tests.resilience.scripted import Scripted

pytestmark = pytest.mark.anyio

READ = Operation(tool_name="get_item", input_schema={}, binding=RestBinding(method="GET", path="/items"),
                 hints=ToolHints(read_only=True, idempotent=True))  # fmt: skip
WRITE = Operation(tool_name="put_item", input_schema={}, binding=RestBinding(method="PUT", path="/items"),
                  hints=ToolHints(read_only=False, idempotent=True))  # fmt: skip


class Counting(Backend):
    def __init__(self, delay: float = 0.0, fail: bool = False) -> None:
        self.calls = 0
        self.delay = delay
        self.fail = fail

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.fail:
            return Failure("HTTP 500", 500)
        return JsonBody({"n": self.calls}, f'{{"n":{self.calls}}}')


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _user(token: str) -> CallExtras:
    return CallExtras(credentials=Placement(headers={"Authorization": f"Bearer {token}"}))


async def test_a_read_only_answer_is_kept_for_its_ttl() -> None:
    clock = Clock()
    cached = Cached(AnswerCache(clock=clock), Cache(ttl_seconds=30, tools={"get_item": 10}), "0:svc")
    backend = Counting()
    first = await cached.call(backend, READ, {"id": 1}, None, None)
    again = await cached.call(backend, READ, {"id": 1}, None, None)
    assert first == again and backend.calls == 1
    assert (await cached.call(backend, READ, {"id": 2}, None, None)) != first  # other arguments: another answer
    clock.now = 10.5
    assert (await cached.call(backend, READ, {"id": 1}, None, None)) != first and backend.calls == 3


async def test_what_changes_things_or_fails_is_never_kept() -> None:
    cached = Cached(AnswerCache(), Cache(), "0:svc")
    backend = Counting()
    await cached.call(backend, WRITE, {"id": 1}, None, None)
    await cached.call(backend, WRITE, {"id": 1}, None, None)
    assert backend.calls == 2
    failing = Counting(fail=True)
    await cached.call(failing, READ, {}, None, None)
    await cached.call(failing, READ, {}, None, None)
    assert failing.calls == 2
    off = Cached(AnswerCache(), Cache(tools={"get_item": 0}), "0:svc")
    await off.call(backend, READ, {}, None, None)
    await off.call(backend, READ, {}, None, None)
    assert backend.calls == 4


async def test_users_never_see_each_other_s_answers() -> None:
    cached = Cached(AnswerCache(), Cache(), "0:svc")
    backend = Counting()
    ada = await cached.call(backend, READ, {"id": 1}, None, _user("ada-token"))
    bob = await cached.call(backend, READ, {"id": 1}, None, _user("bob-token"))
    assert ada != bob and backend.calls == 2
    assert await cached.call(backend, READ, {"id": 1}, None, _user("ada-token")) == ada
    traced = CallExtras(headers={"traceparent": "00-abc-def-01"}, credentials=_user("ada-token").credentials)
    assert call_key("m", READ, {"id": 1}, traced) == call_key("m", READ, {"id": 1}, _user("ada-token"))
    passed = CallExtras(headers={"X-Tenant": "a"})
    assert call_key("m", READ, {}, passed) != call_key("m", READ, {}, CallExtras(headers={"X-Tenant": "b"}))
    # the finding: the client's baggage, which the backend receives, was left out with the trace context
    alice = CallExtras(headers={"baggage": "tenant=alice"})
    assert call_key("m", READ, {}, alice) != call_key("m", READ, {}, CallExtras(headers={"baggage": "tenant=bob"}))


async def test_identical_calls_in_flight_are_made_once_and_a_cancelled_one_does_not_cancel_it() -> None:
    heard: list[str] = []
    cached = Cached(AnswerCache(), Cache(), "0:svc", heard.append)
    backend = Counting(delay=0.2)
    first = asyncio.ensure_future(cached.call(backend, READ, {"id": 1}, None, None))
    await asyncio.sleep(0.01)
    others = [asyncio.ensure_future(cached.call(backend, READ, {"id": 1}, None, None)) for _ in range(9)]
    await asyncio.sleep(0.01)
    first.cancel()
    answers = await asyncio.gather(*others)
    assert backend.calls == 1 and all(answer == answers[0] for answer in answers)
    assert heard.count("coalesced") == 9
    assert await cached.call(backend, READ, {"id": 1}, None, None) == answers[0]  # kept
    assert heard[-1] == "hit"


async def test_the_cache_is_bounded() -> None:
    cache = AnswerCache(max_entries=3)
    cached = Cached(cache, Cache(), "0:svc")
    backend = Counting()
    for n in range(10):
        await cached.call(backend, READ, {"id": n}, None, None)
    assert len(cache) == 3
    big = AnswerCache(max_bytes=100)
    await Cached(big, Cache(), "0:svc").call(backend, READ, {"id": "x"}, None, None)
    assert len(big) == 1
    for n in range(20):
        await Cached(big, Cache(), "0:svc").call(backend, READ, {"id": n}, None, None)
    assert len(big) == 1  # each answer weighs its text's memory, 56 to 58 bytes: two do not fit in 100


def _file_read(path: str) -> Operation:
    """A `file://` resource read as the gateway makes it: no tool of its own, the path in its binding."""
    return Operation(tool_name="resources_read", input_schema={"type": "object"},
                     binding=RestBinding(method="GET", path=path), hints=ToolHints(read_only=True))  # fmt: skip


async def test_reads_of_other_files_or_of_another_member_are_other_calls() -> None:
    answers = AnswerCache()
    first, second = Cached(answers, Cache(), "0:svc-a"), Cached(answers, Cache(), "1:svc-b")
    backend = Counting()
    spec = await first.call(backend, _file_read("/openapi.yaml"), {}, None, None)
    assert await first.call(backend, _file_read("/books/2"), {}, None, None) != spec
    assert await second.call(backend, _file_read("/openapi.yaml"), {}, None, None) != spec
    assert await first.call(backend, _file_read("/openapi.yaml"), {}, None, None) == spec and backend.calls == 3


@pytest.mark.parametrize(
    "answer",
    [
        JsonBody({"orders": None}, '{"orders":null}', notes=("GraphQL errors: orders service unavailable",)),
        UnparsedJson(b'{"errors":[{"message":"down"}]}', graphql_answer),
    ],
)
async def test_a_graphql_answer_with_errors_is_not_kept(answer: BackendResult) -> None:
    backend = Scripted([answer])
    cached = Cached(AnswerCache(), Cache(), "0:svc")
    for _ in range(2):
        await cached.call(backend, READ, {}, None, None)
    assert backend.calls == 2
    large_rest = Scripted([UnparsedJson(b'{"n":1}', json_answer)])
    for _ in range(2):
        await cached.call(large_rest, READ, {"other": 1}, None, None)
    assert large_rest.calls == 1


async def test_each_hit_is_a_value_of_its_own() -> None:
    """A kept answer is its text, read again on each hit: what one caller does to its value, another never sees."""
    cached = Cached(AnswerCache(), Cache(), "0:svc")
    backend = Scripted([JsonBody({"tags": ["a"]}, '{"tags":["a"]}')])
    first = await cached.call(backend, READ, {}, None, None)
    assert isinstance(first, JsonBody)
    hit = await cached.call(backend, READ, {}, None, None)
    assert isinstance(hit, JsonBody) and hit == first and hit.value is not first.value and backend.calls == 1
    hit.value["tags"].append("changed")
    again = await cached.call(backend, READ, {}, None, None)
    assert isinstance(again, JsonBody) and again.value == {"tags": ["a"]}


class Streaming(Backend):
    """Tells progress 1 to 3, a tick apart, then answers."""

    def __init__(self) -> None:
        self.calls = 0

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], progress: Progress | None = None,
        extras: CallExtras | None = None,
    ) -> BackendResult:  # fmt: skip
        self.calls += 1
        for step in (1.0, 2.0, 3.0):
            await asyncio.sleep(0.02)
            assert progress is not None
            await progress(step, 3.0, None)
        return JsonBody({"items": [1, 2]}, '{"items":[1,2]}')


async def test_callers_waiting_for_one_call_each_hear_its_progress_and_get_a_value_of_their_own() -> None:
    """The finding: the call shared by identical callers told its progress to the first caller only, a first caller
    whose client was gone (its progress raising) failed the call for everyone, and every caller got the very same
    parsed value."""
    cached = Cached(AnswerCache(), Cache(), "0:svc")
    backend = Streaming()
    heard: dict[str, list[float]] = {"gone": [], "waiting": []}

    async def gone(value: float, total: float | None, message: str | None) -> None:
        heard["gone"].append(value)
        raise ConnectionResetError("the client went away")

    async def waiting(value: float, total: float | None, message: str | None) -> None:
        heard["waiting"].append(value)

    first = asyncio.ensure_future(cached.call(backend, READ, {}, gone, None))
    await asyncio.sleep(0)  # the call is under way before the second caller comes
    second = await cached.call(backend, READ, {}, waiting, None)
    answer = await first
    assert backend.calls == 1
    assert heard == {"gone": [1.0], "waiting": [1.0, 2.0, 3.0]}
    assert isinstance(answer, JsonBody) and isinstance(second, JsonBody)
    assert answer.value == second.value and answer.value is not second.value
