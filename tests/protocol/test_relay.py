"""Two endpoints serving one endpoint id on one session store, joined by a relay, act as two replicas: what
the client sends to the "wrong" one (an elicitation's answer, a cancellation, a DELETE, a notification for
a GET stream) reaches the one that holds the live request or stream, and what a session's GET stream missed while
none was open on either reaches the next one, in memory and in Redis. The Redis relay is checked the same way
across processes in tests/deployment/test_replicas.py."""

from __future__ import annotations

import secrets
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import orjson
import pytest
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from apimcp.protocol import EndpointOptions, McpEndpoint, MemoryEventStore, MemoryRelay, MemorySessionStore
from apimcp.protocol.backlog import MemoryBacklog
from apimcp.protocol.exchange import Receive, Scope, Send
from apimcp.state.redis_events import RedisEventStore
from apimcp.state.redis_relay import RedisRelay
from apimcp.state.redis_sessions import RedisSessionStore
from tests.protocol.showcase import Showcase
from tests.state.conftest import REDIS_URL
from tests.support.live_server import live_app, live_server
from tests.support.mcp_http import ACCEPT_BOTH, McpHttp, first_server_request, get_stream, sse_messages


@dataclass
class Pair:
    first: str
    second: str
    base: str
    showcase: Showcase


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    showcase = Showcase()
    options = EndpointOptions(sessions=MemorySessionStore(), relay=MemoryRelay(), client_request_timeout=5)
    first, second = McpEndpoint(showcase, options), McpEndpoint(showcase, options)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if path.startswith("/poke/"):  # a notification for a session, sent from the second "replica"
            second.notify_session(path.removeprefix("/poke/"), "notifications/message", {"level": "info", "data": 1})
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await (first if path.startswith("/first") else second)(scope, receive, send)

    def shutdown() -> None:
        first.shutdown()
        second.shutdown()

    with live_server(app, shutdown) as base:
        yield Pair(f"{base}/first/mcp", f"{base}/second/mcp", base, showcase)


def test_an_answer_posted_to_the_other_replica_reaches_the_waiting_handler(pair: Pair) -> None:
    with McpHttp(pair.first) as first, McpHttp(pair.second) as second:
        session = first.initialize("2025-11-25", {"elicitation": {}})
        body = orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "elicit"}})
        headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
        with first.http.stream("POST", pair.first, content=body, headers=headers) as response:
            request, rest = first_server_request(response.iter_lines())
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}
            assert second.post(answer, session.headers()).status == 202
            final = next(iter(rest))
    assert final["id"] == 7 and final["result"]["content"] == [{"type": "text", "text": "Hello, Bo!"}]  # type: ignore[index]


def test_a_cancellation_sent_to_the_other_replica_stops_the_request(pair: Pair) -> None:
    with McpHttp(pair.first) as first, McpHttp(pair.second) as second:
        session = first.initialize()
        outcome: dict[str, object] = {}
        call = {"jsonrpc": "2.0", "id": "slow-x", "method": "tools/call", "params": {"name": "slow"}}
        worker = threading.Thread(target=lambda: outcome.setdefault("reply", session.post(call)))
        before = len(pair.showcase.cancelled)
        worker.start()
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-x"}}
        for _ in range(500):  # until the call has reached its handler on the first replica
            assert second.post(cancel, session.headers()).status == 202
            if len(pair.showcase.cancelled) > before:
                break
            worker.join(0.01)
        worker.join(5)
    assert not worker.is_alive()
    assert pair.showcase.cancelled[before:] == ["slow-x"]
    reply = outcome["reply"]
    assert reply.status == 200 and reply.messages == []  # type: ignore[attr-defined]  # a stream ended with nothing


def test_get_streams_hear_notifications_and_deletes_sent_through_the_other_replica(pair: Pair) -> None:
    with McpHttp(pair.first) as first:
        session = first.initialize()
        headers = {"accept": "text/event-stream", **session.headers()}
        with httpx2.Client(timeout=10) as listener, listener.stream("GET", pair.first, headers=headers) as stream:
            assert stream.status_code == 200
            assert httpx2.post(f"{pair.base}/poke/{session.id}").status_code == 204
            lines = stream.iter_lines()
            heard = next(sse_messages(lines))
            assert heard == {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": 1},
            }
            deleted = httpx2.delete(pair.second, headers=session.headers())
            assert deleted.status_code == 200
            assert list(sse_messages(lines)) == []  # the first replica ended the stream


# --- what a GET stream missed while its session had none open on either replica ----------------------


@dataclass
class Replicas:
    first: str
    base: str
    parked: Callable[[str], list[bytes]]
    """What is parked for a session, as the shared store holds it."""


def _two_replicas(options: EndpointOptions) -> Callable[[Scope, Receive, Send], Any]:
    """Two endpoints on `options`; `/poke/<session>` notifies a session and `/change` changes the tool list, on the
    second one, answering once what that leaves for streams not open is stored."""
    first, second = McpEndpoint(Showcase(), options), McpEndpoint(Showcase(), options)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if path.startswith(("/poke/", "/change")):
            if path.startswith("/poke/"):
                second.notify_session(path.removeprefix("/poke/"), "notifications/message", {"level": "info"})
            else:
                second.changes.tools_changed()
            missed = second._sessions._missed
            assert missed is not None
            await missed.settled()
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await (first if path.startswith("/first") else second)(scope, receive, send)

    return app


@pytest.fixture(scope="module", params=["memory", "redis"])
def replicas(request: pytest.FixtureRequest) -> Iterator[Replicas]:
    if request.param == "memory":
        events = MemoryEventStore()
        options = EndpointOptions(sessions=MemorySessionStore(), relay=MemoryRelay(), events=events)
        backlog = events.backlog
        assert isinstance(backlog, MemoryBacklog)

        def kept(session: str) -> list[bytes]:
            box = backlog._boxes.get(session)
            return list(box.parked) if box is not None else []

        with live_server(_two_replicas(options)) as base:
            yield Replicas(f"{base}/first/mcp", base, kept)
        return
    prefix = f"apimcp-test:{secrets.token_hex(6)}:"

    @asynccontextmanager
    async def served() -> AsyncIterator[Any]:
        client = Redis.from_url(REDIS_URL)
        relay = RedisRelay(client, prefix)
        options = EndpointOptions(sessions=RedisSessionStore(client, prefix), relay=relay,
                                  events=RedisEventStore(client, prefix))  # fmt: skip
        yield _two_replicas(options)
        await relay.close()
        await client.aclose()

    sync = SyncRedis.from_url(REDIS_URL)

    def parked(session: str) -> list[bytes]:
        found: list[bytes] = sync.lrange(f"{prefix}bl:{{{session}}}:p", 0, -1)  # type: ignore[assignment]
        return found

    try:
        with live_app(served) as base:
            yield Replicas(f"{base}/first/mcp", base, parked)
    finally:
        keys = list(sync.scan_iter(match=prefix + "*", count=1000))
        if keys:
            sync.delete(*keys)
        sync.close()


def test_a_notification_for_a_session_with_no_stream_on_any_replica_waits_for_its_next_one(replicas: Replicas) -> None:
    with McpHttp(replicas.first) as mcp:
        session = mcp.initialize()
        assert httpx2.post(f"{replicas.base}/poke/{session.id}").status_code == 204
        assert len(replicas.parked(session.id)) == 1
        with get_stream(replicas.first, session) as events:
            _, heard = next(events)
    assert heard == {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    assert replicas.parked(session.id) == []


def test_a_change_on_another_replica_while_no_stream_is_open_reaches_the_next_one(replicas: Replicas) -> None:
    with McpHttp(replicas.first) as mcp:
        session = mcp.initialize()
        with get_stream(replicas.first, session):
            pass  # a stream opened and ended before the change
        for _ in range(3):
            assert httpx2.post(f"{replicas.base}/change").status_code == 204
        with get_stream(replicas.first, session) as events:
            _, heard = next(events)
            assert httpx2.post(f"{replicas.base}/poke/{session.id}").status_code == 204  # relayed to the stream
            _, then = next(events)
    assert heard["method"] == "notifications/tools/list_changed"
    assert then["method"] == "notifications/message"  # the three changes came as one notification


def test_a_deleted_session_s_backlog_is_dropped(replicas: Replicas) -> None:
    with McpHttp(replicas.first) as mcp:
        session = mcp.initialize()
        assert httpx2.post(f"{replicas.base}/poke/{session.id}").status_code == 204
        assert len(replicas.parked(session.id)) == 1
        assert httpx2.delete(replicas.base + "/second/mcp", headers=session.headers()).status_code == 200
    assert replicas.parked(session.id) == []
