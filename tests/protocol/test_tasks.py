"""Tool calls as tasks, in both eras: the 2026-07-28 tasks extension (the server decides) and 2025-11-25
experimental tasks (the client asks). Two endpoints with one id share a task store as two replicas would;
a third endpoint with another id shares the store but must never reach their tasks. The conformance suite's
tasks-* scenarios run in tests/conformance; Redis-backed replicas in tests/deployment/test_replicas.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.protocol.tasks.limits import TaskLimits, TasksFull
from apimcp.protocol.tasks.records import TASKS_EXTENSION
from apimcp.protocol.tasks.store import MemoryTaskStore
from tests.protocol.jobs import WITH_TASKS, Jobs
from tests.support.live_server import live_server
from tests.support.mcp_http import McpHttp, sse_messages


@dataclass
class Endpoints:
    first: str
    second: str
    other: str
    jobs: Jobs
    store: MemoryTaskStore


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    jobs, store = Jobs(), MemoryTaskStore()
    options = EndpointOptions(sessions=MemorySessionStore(), tasks=store, client_request_timeout=5)
    first, second = McpEndpoint(jobs, options), McpEndpoint(jobs, options)
    other = McpEndpoint(jobs, options, endpoint_id="other")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        chosen = first if path.startswith("/first") else second if path.startswith("/second") else other
        await chosen(scope, receive, send)

    def shutdown() -> None:
        for endpoint in (first, second, other):
            endpoint.shutdown()

    with live_server(app, shutdown) as base:
        yield Endpoints(f"{base}/first/mcp", f"{base}/second/mcp", f"{base}/other/mcp", jobs, store)


def _call(client: McpHttp, tool: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> Any:
    return client.modern("tools/call", {"name": tool, "arguments": dict(arguments or {})}, **kw)


def _until(client: McpHttp, task_id: str, wanted: set[str], caps: Mapping[str, Any] = WITH_TASKS) -> Any:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = client.modern("tasks/get", {"taskId": task_id}, capabilities=caps).result
        if got["status"] in wanted:
            return got
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {wanted}")


def _orphan(store: MemoryTaskStore, task_id: str) -> None:
    """Leave the task as a replica that died leaves it: a record nobody renews (its runner here is told it ended)."""
    stored = asyncio.run(store.get(task_id))
    assert stored is not None
    stale = replace(stored.record, lease_until=time.time() - 1)
    store._tasks[stale.task_id] = (stale, {})


# --- 2026-07-28 -------------------------------------------------------------------------------------


def test_discover_advertises_the_extension(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        caps = client.modern("server/discover").result["capabilities"]
    assert caps["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in caps


def test_a_quick_call_is_answered_directly_and_a_slow_one_becomes_a_task(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        quick = _call(client, "quick", capabilities=WITH_TASKS).result
        assert quick["resultType"] == "complete" and quick["content"][0]["text"] == "quick done"
        created = _call(client, "sleepy", {"seconds": 0.6}, capabilities=WITH_TASKS).result
        assert created["resultType"] == "task" and created["status"] == "working"
        assert isinstance(created["ttlMs"], int) and isinstance(created["pollIntervalMs"], int)
        assert created["createdAt"].endswith("Z") and not {"result", "error", "task", "ttl"} & created.keys()
        working = client.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
        assert working["status"] == "working" and "result" not in working
        done = _until(client, created["taskId"], {"completed"})
    assert done["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "slept 0.6"
    assert "_meta" not in done["result"]


def test_clients_without_the_extension_get_ordinary_answers(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        plain = _call(client, "sleepy", {"seconds": 0.2}).result
        assert plain["resultType"] == "complete" and plain["content"][0]["text"] == "slept 0.2"
        refused = _call(client, "strict")
        assert refused.status == 400 and refused.error["code"] == -32021
        assert refused.error["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        gated = client.modern("tasks/get", {"taskId": "task-x"})
        assert gated.status == 400 and gated.error["code"] == -32021
        # one call may opt in through its own _meta
        opted = _call(client, "sleepy", {"seconds": 0.3}, capabilities={"extensions": {TASKS_EXTENSION: {}}})
        assert opted.result["resultType"] == "task"


def test_a_required_tool_that_is_quick_still_answers_with_a_task(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        created = _call(client, "strict", capabilities=WITH_TASKS).result
        assert created["resultType"] == "task" and created["status"] == "completed"
        got = client.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
    assert got["result"]["content"][0]["text"] == "strict done"


def test_cancel_from_the_other_replica_stops_the_call(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as first, McpHttp(endpoints.second) as second:
        created = _call(first, "sleepy", {"seconds": 30, "label": "cross"}, capabilities=WITH_TASKS).result
        ack = second.modern("tasks/cancel", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        assert _until(second, created["taskId"], {"cancelled", "completed", "failed"})["status"] == "cancelled"
        again = first.modern("tasks/cancel", {"taskId": created["taskId"]}, capabilities=WITH_TASKS)
        assert again.result["resultType"] == "complete"  # idempotent on an ended task
    deadline = time.monotonic() + 5
    while "cross" not in endpoints.jobs.cancelled and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "cross" in endpoints.jobs.cancelled


def test_a_task_waits_for_input_and_takes_responses_one_by_one(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as first, McpHttp(endpoints.second) as second:
        created = _call(first, "pair", capabilities=WITH_TASKS).result
        waiting = _until(second, created["taskId"], {"input_required"})
        assert set(waiting["inputRequests"]) == {"one", "two"}
        assert waiting["inputRequests"]["one"]["method"] == "elicitation/create"
        bad = second.modern(
            "tasks/update", {"taskId": created["taskId"], "inputResponses": {"one": 5}}, capabilities=WITH_TASKS
        )
        assert bad.status == 400 and bad.error["code"] == -32602
        answer = {"action": "accept", "content": {"name": "A"}}
        ack = second.modern(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {"one": answer, "stray": {"x": 1}}},
            capabilities=WITH_TASKS,
        ).result
        assert set(ack) == {"resultType", "_meta"}
        partial = first.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
        assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["two"]
        second.modern(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {"two": {"action": "accept", "content": {"name": "B"}}}},
            capabilities=WITH_TASKS,
        )
        done = _until(first, created["taskId"], {"completed", "failed"})
    assert done["result"]["content"][0]["text"] == "A+B"


def test_a_protocol_error_fails_the_task(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        created = _call(client, "boom", capabilities=WITH_TASKS).result
        failed = _until(client, created["taskId"], {"failed", "completed"})
    assert failed["status"] == "failed" and failed["error"] == {"code": -32603, "message": "it broke"}
    assert "result" not in failed


def test_another_endpoint_on_the_same_store_never_reaches_a_task(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as first, McpHttp(endpoints.other) as other:
        created = _call(first, "sleepy", {"seconds": 0.2}, capabilities=WITH_TASKS).result
        unknown = other.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS)
        missing = first.modern("tasks/get", {"taskId": "task-nobody"}, capabilities=WITH_TASKS)
    assert unknown.status == 400 and unknown.error["code"] == -32602
    assert missing.error["code"] == -32602


def test_removed_methods_and_mismatched_names(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        for method in ("tasks/result", "tasks/list"):
            reply = client.modern(method, {"taskId": "t"}, capabilities=WITH_TASKS)
            assert reply.status == 404 and reply.error["code"] == -32601
        wrong = client.modern("tasks/get", {"taskId": "t"}, capabilities=WITH_TASKS, headers={"mcp-name": "u"})
        assert wrong.status == 400 and wrong.error["code"] == -32020


def test_a_task_whose_runner_stopped_is_reported_failed(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        created = _call(client, "sleepy", {"seconds": 30, "label": "orphan"}, capabilities=WITH_TASKS).result
        _orphan(endpoints.store, created["taskId"])
        got = client.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
    assert got["status"] == "failed" and "stopped" in got["error"]["message"]


def test_a_task_whose_gateway_crashed_says_so_in_its_status_message_in_every_era(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        created = _call(client, "sleepy", {"seconds": 30, "label": "crashed"}, capabilities=WITH_TASKS).result
        _orphan(endpoints.store, created["taskId"])
        modern = client.modern("tasks/get", {"taskId": created["taskId"]}, capabilities=WITH_TASKS).result
        session = client.initialize("2025-11-25")
        call = {"name": "sleepy", "arguments": {"seconds": 30, "label": "crashed-too"}, "task": {}}
        task = session.request("tools/call", call).result["task"]
        _orphan(endpoints.store, task["taskId"])
        got = session.request("tasks/get", {"taskId": task["taskId"]}).result
        listed = session.request("tasks/list").result["tasks"]
    stopped = "The server running this task stopped before the task ended"
    assert (modern["status"], modern["statusMessage"]) == ("failed", stopped)
    assert (got["status"], got["statusMessage"]) == ("failed", stopped)
    assert [t["statusMessage"] for t in listed] == [stopped]


def test_a_full_store_answers_directly() -> None:
    async def scenario() -> None:
        from apimcp.protocol.tasks.records import TaskRecord

        store = MemoryTaskStore(TaskLimits(max_tasks=1))
        now = time.time()
        record = TaskRecord(task_id="t1", owner=None, session_id=None, status="working", created_at=now,
                            updated_at=now, ttl_ms=60_000, poll_interval_ms=500, lease_until=now + 15)  # fmt: skip
        assert await store.create(record)
        with pytest.raises(TasksFull):
            await store.create(replace(record, task_id="t2"))
        assert await store.update(record.moved("cancelled"))
        assert not await store.update(record.moved("completed"))  # an ended task stays as it ended
        assert (await store.get("t1")).record.status == "cancelled"  # type: ignore[union-attr]

    asyncio.run(scenario())


@pytest.fixture
def capped() -> Iterator[str]:
    """An endpoint whose store keeps 2 tasks per owner, results of 40 bytes, for a minute at most (one per test:
    every client of these tests is one owner, the address 127.0.0.1)."""
    store = MemoryTaskStore(TaskLimits(max_tasks_per_owner=2, max_result_bytes=40, max_ttl_seconds=60))
    endpoint = McpEndpoint(Jobs(), EndpointOptions(sessions=MemorySessionStore(), tasks=store))
    with live_server(endpoint, endpoint.shutdown) as base:
        yield f"{base}/mcp"


def test_a_caller_over_its_task_cap_is_answered_directly_or_refused_in_every_era(capped: str) -> None:
    with McpHttp(capped) as client:
        # 2026-07-28, anonymous: the client's address owns its tasks
        kept = [_call(client, "sleepy", {"seconds": 30}, capabilities=WITH_TASKS).result for _ in range(2)]
        direct = _call(client, "sleepy", {"seconds": 0.2}, capabilities=WITH_TASKS).result
        refused = _call(client, "strict", capabilities=WITH_TASKS).error
        # 2025-11-25, anonymous: a session has no allowance of its own (anyone may open sessions): the address's
        session = client.initialize("2025-11-25")
        over = session.request("tools/call", {"name": "sleepy", "arguments": {"seconds": 0.2}, "task": {}}).result
        strict = session.request("tools/call", {"name": "strict", "task": {}}).error
    assert [k["resultType"] for k in kept] == ["task", "task"]
    assert direct["resultType"] == "complete" and direct["content"][0]["text"] == "slept 0.2"
    assert refused["code"] == -32000 and refused["data"] == {"limit": "max_tasks_per_owner"}
    assert "2 tasks kept (max_tasks_per_owner)" in refused["message"]
    assert "task" not in over and over["content"][0]["text"] == "slept 0.2"
    assert strict["code"] == -32000 and strict["data"] == {"limit": "max_tasks_per_owner"}


def test_a_result_larger_than_max_result_bytes_fails_its_task(capped: str) -> None:
    with McpHttp(capped) as client:
        session = client.initialize("2025-11-25")
        task = session.request("tools/call", {"name": "sleepy", "arguments": {"seconds": 0}, "task": {}}).result
        failure = session.request("tasks/result", {"taskId": task["task"]["taskId"]}).error
        got = session.request("tasks/get", {"taskId": task["task"]["taskId"]}).result
    assert failure["code"] == -32000 and failure["data"] == {"limit": "max_result_bytes"}
    assert got["status"] == "failed" and "more than the 40 a task keeps (max_result_bytes)" in got["statusMessage"]


def test_a_task_is_kept_no_longer_than_max_ttl_seconds(capped: str) -> None:
    with McpHttp(capped) as client:
        session = client.initialize("2025-11-25")
        call = {"name": "sleepy", "arguments": {"seconds": 30}, "task": {"ttl": 86_400_000}}
        task = session.request("tools/call", call).result["task"]
        unasked = session.request("tools/call", {"name": "sleepy", "arguments": {"seconds": 30}, "task": {}})
    assert task["ttl"] == 60_000
    assert unasked.result["task"]["ttl"] == 60_000  # the default (10 minutes) is bounded too


# --- 2025-11-25 -------------------------------------------------------------------------------------


def test_session_tools_list_and_capabilities_say_task_support(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        session = client.initialize("2025-11-25")
        assert session.init_reply.result["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        tools = {t["name"]: t for t in session.request("tools/list").result["tools"]}
        older = client.initialize("2025-06-18")
        assert "tasks" not in older.init_reply.result["capabilities"]
        assert "execution" not in older.request("tools/list").result["tools"][0]
    assert tools["sleepy"]["execution"] == {"taskSupport": "optional"}
    assert tools["strict"]["execution"] == {"taskSupport": "required"}
    assert tools["plain"]["execution"] == {"taskSupport": "forbidden"}


def test_session_task_lifecycle_across_replicas(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as first, McpHttp(endpoints.second) as second:
        session = first.initialize("2025-11-25")
        on_second = replace(session, client=second)
        call = {"name": "sleepy", "arguments": {"seconds": 0.4}, "task": {"ttl": 60_000}}
        task = session.request("tools/call", call).result["task"]
        assert task["status"] == "working" and task["ttl"] == 60_000 and "ttlMs" not in task
        got = on_second.request("tasks/get", {"taskId": task["taskId"]}).result
        assert got["taskId"] == task["taskId"] and "result" not in got
        listed = on_second.request("tasks/list").result["tasks"]
        assert [t["taskId"] for t in listed] == [task["taskId"]]
        result = on_second.request("tasks/result", {"taskId": task["taskId"]}).result
        assert result["content"][0]["text"] == "slept 0.4"
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        stranger = first.initialize("2025-11-25")
        assert stranger.request("tasks/get", {"taskId": task["taskId"]}).error["code"] == -32602
        assert stranger.request("tasks/list").result["tasks"] == []


def test_session_cancel_and_errors(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        session = client.initialize("2025-11-25")
        task = session.request("tools/call", {"name": "sleepy", "arguments": {"seconds": 30}, "task": {}}).result
        cancelled = session.request("tasks/cancel", {"taskId": task["task"]["taskId"]}).result
        assert cancelled["status"] == "cancelled"
        assert session.request("tasks/cancel", {"taskId": task["task"]["taskId"]}).error["code"] == -32602
        refused = session.request("tools/call", {"name": "plain", "task": {}}).error
        assert refused["code"] == -32601
        assert session.request("tools/call", {"name": "sleepy", "task": 3}).error["code"] == -32602
        boom = session.request("tools/call", {"name": "boom", "task": {}}).result["task"]
        failure = session.request("tasks/result", {"taskId": boom["taskId"]}).error
        assert failure["code"] == -32603 and failure["message"] == "it broke"
        older = client.initialize("2025-06-18")
        direct = older.request("tools/call", {"name": "sleepy", "arguments": {"seconds": 0}, "task": {}}).result
        assert direct["content"][0]["text"] == "slept 0"
        assert older.request("tasks/get", {"taskId": "x"}).error["code"] == -32601


def test_session_task_asks_for_input_on_the_result_stream(endpoints: Endpoints) -> None:
    with McpHttp(endpoints.first) as client:
        session = client.initialize("2025-11-25", {"elicitation": {}})
        task = session.request("tools/call", {"name": "ask", "task": {}}).result["task"]
        body = {"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": {"taskId": task["taskId"]}}
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        with client.http.stream("POST", client.url, json=body, headers={**headers, **session.headers()}) as stream:
            messages = sse_messages(stream.iter_lines())
            asked = next(messages)
            assert asked["method"] == "elicitation/create"
            assert asked["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Z"}}}
            assert session.post(answer).status == 202
            final = next(messages)
    assert final["id"] == 99 and final["result"]["content"][0]["text"] == "Hello Z"
