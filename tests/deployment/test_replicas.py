"""Three replicas of the engine's showcase behind a round-robin balancer with no stickiness, sharing the
machine's Redis: every request of a session lands on another replica, and what the client sends for a
request running elsewhere (answers to elicitation, sampling and roots requests, cancellations, DELETE)
crosses replicas through the Redis relay. SDK clients of both eras notice nothing."""

from __future__ import annotations

import base64
import itertools
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import anyio
import httpx2
import mcp_types as types
import orjson
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from redis import Redis

from tests.protocol.jobs import WITH_TASKS
from tests.state.conftest import REDIS_URL
from tests.support.balancer import Balancer
from tests.support.live_aiohttp import live_aiohttp
from tests.support.mcp_http import (
    ACCEPT_BOTH,
    McpHttp,
    first_server_request,
    get_stream,
    sse_events,
    sse_messages,
)
from tests.support.processes import Background, free_port


@dataclass
class Trio:
    url: str
    balancer: Balancer
    replicas: list[str]


def shared_state_env() -> tuple[dict[str, str], str]:
    """The variables replicas sharing one new key prefix of the machine's Redis are given, and the prefix."""
    prefix = f"apimcp-test:{secrets.token_hex(6)}:"
    return {
        "APIMCP_STATE_URL": REDIS_URL,
        "APIMCP_STATE_PREFIX": prefix,
        "APIMCP_STATE_KEY": base64.b64encode(os.urandom(32)).decode(),
        "APIMCP_REQUEST_STATE_KEYS": secrets.token_hex(32),
    }, prefix


def forget_prefix(prefix: str) -> None:
    with Redis.from_url(REDIS_URL) as client:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trio]:
    env, prefix = shared_state_env()
    logs = tmp_path_factory.mktemp("replicas")
    ports = [free_port() for _ in range(3)]
    running = [
        Background(logs / f"replica-{port}.log", str(port), env=env, module="tests.support.showcase_replica")
        for port in ports
    ]
    replicas = [f"http://127.0.0.1:{port}" for port in ports]
    balancer = Balancer(replicas)
    try:
        for process, replica in zip(running, replicas, strict=True):
            process.wait_for_port(int(replica.rsplit(":", 1)[1]))
        with live_aiohttp(balancer.app()) as base:
            yield Trio(f"{base}/mcp", balancer, replicas)
    finally:
        for process in running:
            process.stop()
        forget_prefix(prefix)


def test_every_request_of_a_session_lands_on_another_replica(trio: Trio) -> None:
    with McpHttp(trio.url) as mcp:
        session = mcp.initialize()
        start = len(trio.balancer.served)
        for _ in range(6):
            assert session.request("ping").result == {}
        served = trio.balancer.served[start:]
    assert len(served) == 6
    assert all(a != b for a, b in itertools.pairwise(served))
    assert set(served) == set(trio.replicas)


@pytest.mark.parametrize(
    ("tool", "capabilities", "answer", "expected"),
    [
        ("elicit", {"elicitation": {}}, {"action": "accept", "content": {"name": "Ada"}}, "Hello, Ada!"),
        ("sample", {"sampling": {}}, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
         "model said: hi"),
        ("roots", {"roots": {}}, {"roots": [{"uri": "file:///a"}]}, "file:///a"),
    ],
)  # fmt: skip
def test_a_clients_answer_reaches_the_replica_that_asked(
    trio: Trio, tool: str, capabilities: dict[str, Any], answer: dict[str, Any], expected: str
) -> None:
    with McpHttp(trio.url) as mcp:
        session = mcp.initialize("2025-11-25", capabilities)
        body = orjson.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": tool}})
        headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
        with mcp.http.stream("POST", trio.url, content=body, headers=headers) as response:
            asked_by = trio.balancer.served[-1]
            request, rest = first_server_request(response.iter_lines())
            assert session.post({"jsonrpc": "2.0", "id": request["id"], "result": answer}).status == 202
            assert trio.balancer.served[-1] != asked_by
            final = next(iter(rest))
    assert final["id"] == 9
    assert final["result"]["content"][0]["text"] == expected


def test_cancellations_and_deletes_cross_replicas(trio: Trio) -> None:
    with McpHttp(trio.url) as mcp:
        session = mcp.initialize()
        outcome: dict[str, Any] = {}
        call = {"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {"name": "slow"}}
        worker = threading.Thread(target=lambda: outcome.setdefault("reply", session.post(call)))
        worker.start()
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-1"}}
        for _ in range(100):  # until the call runs (somewhere) and hears the cancellation
            assert session.post(cancel).status == 202
            worker.join(0.1)
            if not worker.is_alive():
                break
        assert not worker.is_alive()  # the slow tool sleeps 30 s unless cancelled
        reply = outcome["reply"]
        assert reply.status == 200 and reply.messages == []  # a stream that ends with no response, as cancelled
        headers = {"accept": "text/event-stream", **session.headers()}
        with httpx2.Client(timeout=10) as listener, listener.stream("GET", trio.url, headers=headers) as stream:
            assert stream.status_code == 200
            assert httpx2.delete(trio.url, headers=session.headers()).status_code == 200
            assert list(sse_messages(stream.iter_lines())) == []  # the replica holding the stream ended it
        assert session.request("ping").status == 404


async def _elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "octocat"})


async def _sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="four"), model="m")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_sdk_clients_notice_nothing(trio: Trio, mode: str) -> None:
    async def run() -> list[str]:
        async with Client(
            trio.url,
            mode=mode,  # type: ignore[arg-type]
            elicitation_callback=_elicit,
            sampling_callback=_sample,
        ) as client:
            texts = []
            for tool in ("elicit", "sample", "elicit"):
                result = await client.call_tool(tool)
                texts.append(result.content[0].text)  # type: ignore[union-attr]
            listed = await client.list_tools()
            texts.append(str(len(listed.tools) > 0))
            return texts

    assert anyio.run(run) == ["Hello, octocat!", "model said: four", "Hello, octocat!", "True"]


def test_a_dropped_stream_resumes_on_another_replica(trio: Trio) -> None:
    with McpHttp(trio.url) as mcp:
        session = mcp.initialize("2025-11-25", {"elicitation": {}})
        body = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "elicit"}})
        headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
        with httpx2.Client(timeout=10) as http, http.stream("POST", trio.url, content=body, headers=headers) as post:
            ran_on = trio.balancer.served[-1]
            event_id, request = next(sse_events(post.iter_lines()))
        assert event_id is not None  # the stream dropped after its first event
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Al"}}}
        assert session.post(answer).status == 202
        resume = {"accept": "text/event-stream", "last-event-id": event_id, **session.headers()}
        with httpx2.Client(timeout=10) as http, http.stream("GET", trio.url, headers=resume) as resumed:
            assert trio.balancer.served[-1] != ran_on
            events = list(sse_events(resumed.iter_lines()))
    assert [final["result"]["content"][0]["text"] for _, final in events] == ["Hello, Al!"]


def test_a_change_while_no_stream_is_open_reaches_the_stream_resumed_on_another_replica(trio: Trio) -> None:
    first, second, third = (f"{replica}/mcp" for replica in trio.replicas)
    with McpHttp(first) as on_first, McpHttp(second) as on_second:
        session = on_first.initialize()
        with get_stream(first, session) as events:
            assert session.request("tools/call", {"name": "notify_changes"}).status == 200  # heard live
            last_seen = [next(events) for _ in range(3)][-1][0]
        with get_stream(first, session):
            pass  # the first replica has seen that stream end (409 until then), and this one ends at once
        assert replace(session, client=on_second).request("tools/call", {"name": "notify_changes"}).status == 200
        with get_stream(third, session, last_seen) as resumed:
            caught_up = [next(resumed)[1]["method"] for _ in range(3)]
    assert caught_up == [f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")]


def _task_status(mcp: McpHttp, task_id: str, wanted: set[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got: dict[str, Any] = mcp.modern("tasks/get", {"taskId": task_id}, capabilities=WITH_TASKS).result
        if got["status"] in wanted:
            return got
        time.sleep(0.1)
    raise AssertionError(f"task {task_id} never reached {wanted}")


def test_a_task_is_answered_for_updated_and_cancelled_by_every_replica(trio: Trio) -> None:
    jobs = trio.url.replace("/mcp", "/jobs")
    with McpHttp(jobs) as mcp:
        created = mcp.modern("tools/call", {"name": "pair", "arguments": {}}, capabilities=WITH_TASKS).result
        ran_on = trio.balancer.served[-1]
        waiting = _task_status(mcp, created["taskId"], {"input_required"})
        assert set(waiting["inputRequests"]) == {"one", "two"}
        for key, name in (("one", "A"), ("two", "B")):
            answer = {"action": "accept", "content": {"name": name}}
            update = {"taskId": created["taskId"], "inputResponses": {key: answer}}
            assert mcp.modern("tasks/update", update, capabilities=WITH_TASKS).status == 200
        done = _task_status(mcp, created["taskId"], {"completed", "failed"})
        assert done["result"]["content"][0]["text"] == "A+B"
        long = mcp.modern("tools/call", {"name": "sleepy", "arguments": {"seconds": 60}}, capabilities=WITH_TASKS)
        cancel = mcp.modern("tasks/cancel", {"taskId": long.result["taskId"]}, capabilities=WITH_TASKS)
        assert cancel.result["resultType"] == "complete"
        assert _task_status(mcp, long.result["taskId"], {"cancelled", "completed"})["status"] == "cancelled"
    served = trio.balancer.served[-8:]
    assert len(set(served)) == 3 and ran_on in trio.replicas


def test_a_session_task_result_comes_from_another_replica(trio: Trio) -> None:
    jobs = trio.url.replace("/mcp", "/jobs")
    with McpHttp(jobs) as mcp:
        session = mcp.initialize("2025-11-25")
        call = {"name": "sleepy", "arguments": {"seconds": 0.5}, "task": {}}
        task = session.request("tools/call", call).result["task"]
        ran_on = trio.balancer.served[-1]
        result = session.request("tasks/result", {"taskId": task["taskId"]}).result
        assert trio.balancer.served[-1] != ran_on
    assert result["content"][0]["text"] == "slept 0.5"
