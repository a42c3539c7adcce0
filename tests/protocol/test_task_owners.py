"""Whose allowance a task counts against, through an endpoint, in memory and in Redis: the authenticated caller,
else the client's host (an IPv6 address by its /64), never the session (anyone may open as many as they like);
and one owner's results are kept within `max_bytes_per_owner`, so that they never take the store's whole
`max_bytes` from everyone else."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import unquote

import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from apimcp.protocol import (
    CallToolResult,
    EndpointOptions,
    McpEndpoint,
    MemorySessionStore,
    RequestContext,
    TextContent,
)
from apimcp.protocol.caller import CALLER_KEY, Caller
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.protocol.tasks.limits import TaskLimits
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.tasks.store import MemoryTaskStore, TaskStore
from apimcp.state.redis_tasks import RedisTaskStore
from tests.protocol.jobs import WITH_TASKS, Jobs
from tests.state.conftest import REDIS_URL
from tests.support.live_server import live_app
from tests.support.mcp_http import McpHttp

STORES = ["memory", "redis"]


class Bulky(Jobs):
    """Jobs, and `bulky`: a task from its start whose result is `size` characters of text."""

    def task_policy(self, name: str) -> TaskPolicy | None:
        return TaskPolicy("optional", 0.0) if name == "bulky" else super().task_policy(name)

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        if name == "bulky":
            return CallToolResult(content=(TextContent(text="x" * int(arguments["size"])),))
        return await super().call_tool(ctx, name, arguments)


def _as_told(endpoint: McpEndpoint) -> Any:
    """The endpoint, behind a stand-in for what sits in front of it: `/as/<principal>/...` is a request its
    authentication layer let through as that caller, `/from/<address>/...` one from that client address."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        parts = str(scope.get("path", "")).split("/")
        if scope["type"] == "http" and len(parts) > 3 and parts[1] in ("as", "from"):
            told = unquote(parts[2])
            scope = {**scope, **({CALLER_KEY: Caller(told)} if parts[1] == "as" else {"client": (told, 1)})}
        await endpoint(scope, receive, send)

    return app


@contextmanager
def _serving(kind: str, limits: TaskLimits) -> Iterator[str]:
    """The base URL of an endpoint whose tasks are kept in `kind` (memory, or the machine's Redis) within `limits`."""
    prefix = f"apimcp-test:{secrets.token_hex(6)}:"

    @asynccontextmanager
    async def served() -> AsyncIterator[Any]:
        client = Redis.from_url(REDIS_URL) if kind == "redis" else None
        store: TaskStore = (
            MemoryTaskStore(limits) if client is None else RedisTaskStore(client, prefix, 0.05, limits=limits)
        )
        sessions = MemorySessionStore(max_sessions_per_caller=200)  # more than one owner's tasks: tasks bound first
        endpoint = McpEndpoint(Bulky(), EndpointOptions(sessions=sessions, tasks=store))
        try:
            yield _as_told(endpoint)
        finally:
            endpoint.shutdown()
            if client is not None:
                await client.aclose()

    try:
        with live_app(served) as base:
            yield base
    finally:
        if kind == "redis":
            with SyncRedis.from_url(REDIS_URL) as sync:
                keys = list(sync.scan_iter(match=prefix + "*", count=1000))
                if keys:
                    sync.delete(*keys)


def _session_task(client: McpHttp, tool: str = "strict", arguments: Mapping[str, Any] | None = None) -> Any:
    """A 2025-11-25 call as a task, in a session of its own: the task, or the error."""
    session = client.initialize("2025-11-25")
    body = session.request("tools/call", {"name": tool, "arguments": dict(arguments or {}), "task": {}}).body
    return body.get("result", {}).get("task") or body["error"]


def _modern_task(client: McpHttp, tool: str = "strict", arguments: Mapping[str, Any] | None = None) -> Any:
    """A 2026-07-28 call as a task: the created task, or the error."""
    body = client.modern("tools/call", {"name": tool, "arguments": dict(arguments or {})}, capabilities=WITH_TASKS)
    return body.body.get("result") or body.error


def _refused_by(answer: Any) -> str | None:
    """The limit that refused a task (None: a task was created)."""
    return None if "taskId" in answer else answer["data"]["limit"]


def _ended(client: McpHttp, task_id: str) -> Any:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = client.modern("tasks/get", {"taskId": task_id}, capabilities=WITH_TASKS).result
        if got["status"] in ("completed", "failed", "cancelled"):
            return got
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never ended")


@pytest.mark.parametrize("kind", STORES)
def test_sessions_opened_from_one_address_share_its_allowance(kind: str) -> None:
    # 105 anonymous sessions used to keep 105 tasks (each session an owner of its own): enough of them took
    # the whole store. Now the address owns them, whatever the session and the era.
    with _serving(kind, TaskLimits()) as base:

        def sessions(count: int) -> list[str | None]:
            with McpHttp(f"{base}/mcp") as client:
                return [_refused_by(_session_task(client)) for _ in range(count)]

        with ThreadPoolExecutor(8) as pool:  # eight clients at once: the bound holds when they race, too
            answers = [answer for some in pool.map(sessions, [15] * 7) for answer in some]
        with McpHttp(f"{base}/mcp") as client:
            modern = _refused_by(_modern_task(client))
    assert len(answers) == 105 and answers.count(None) == 100
    assert set(answers) == {None, "max_tasks_per_owner"} and modern == "max_tasks_per_owner"


@pytest.mark.parametrize("kind", STORES)
def test_an_ipv6_host_is_one_owner_across_its_slash_64(kind: str) -> None:
    with _serving(kind, TaskLimits(max_tasks_per_owner=2)) as base:
        urls = [f"{base}/from/{address}/mcp" for address in ("2001:db8:0:7::1", "2001:db8:0:7:ffff::2")]
        answers = []
        for url in [*urls, urls[1]]:
            with McpHttp(url) as client:
                answers.append(_refused_by(_modern_task(client)))
        with McpHttp(f"{base}/from/2001:db8:0:8::1/mcp") as neighbour:
            other = _refused_by(_modern_task(neighbour))
    assert answers == [None, None, "max_tasks_per_owner"]
    assert other is None  # the next /64 is another host


@pytest.mark.parametrize("kind", STORES)
def test_callers_from_one_address_each_have_their_own_allowance_and_anonymous_ones_share_one(kind: str) -> None:
    with _serving(kind, TaskLimits(max_tasks_per_owner=2)) as base:
        with McpHttp(f"{base}/as/alice/mcp") as alice, McpHttp(f"{base}/as/bob/mcp") as bob:
            alices = [_refused_by(_session_task(alice)) for _ in range(3)]
            bobs = [_refused_by(_session_task(bob)), _refused_by(_modern_task(bob)), _refused_by(_modern_task(bob))]
        with McpHttp(f"{base}/mcp") as anonymous:
            anonymous_ones = [_refused_by(_session_task(anonymous)) for _ in range(3)]
    assert alices == bobs == anonymous_ones == [None, None, "max_tasks_per_owner"]


@pytest.mark.parametrize("kind", STORES)
def test_an_owner_s_results_beyond_its_bytes_fail_clearly_and_another_s_still_succeed(kind: str) -> None:
    limits = TaskLimits(max_result_bytes=16_000, max_bytes=100_000, max_bytes_per_owner=20_000)
    with _serving(kind, limits) as base, McpHttp(f"{base}/as/alice/mcp") as alice, McpHttp(f"{base}/as/bob/mcp") as bob:
        first = _ended(alice, _modern_task(alice, "bulky", {"size": 12_000})["taskId"])
        second = _ended(alice, _modern_task(alice, "bulky", {"size": 12_000})["taskId"])
        bobs = _ended(bob, _modern_task(bob, "bulky", {"size": 12_000})["taskId"])
        small = _ended(alice, _modern_task(alice, "bulky", {"size": 10})["taskId"])
    assert first["status"] == "completed" and len(first["result"]["content"][0]["text"]) == 12_000
    assert second["status"] == "failed" and second["error"]["data"] == {"limit": "max_bytes_per_owner"}
    assert (
        "more than the 20000 bytes one caller's tasks may hold together (max_bytes_per_owner)"
        in (second["statusMessage"])
    )
    assert bobs["status"] == "completed" and len(bobs["result"]["content"][0]["text"]) == 12_000
    assert small["status"] == "completed"  # what still fits in alice's allowance is kept
