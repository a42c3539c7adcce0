"""Two endpoints serving one endpoint id on one session store, joined by a relay, act as two replicas: what
the client sends to the "wrong" one (an elicitation's answer, a cancellation, a DELETE, a notification for
a GET stream) reaches the one that holds the live request or stream. The Redis relay is checked the same way
across processes in tests/deployment/test_replicas.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import orjson
import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemoryRelay, MemorySessionStore
from apimcp.protocol.exchange import Receive, Scope, Send
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import ACCEPT_BOTH, McpHttp, first_server_request, sse_messages


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
    assert outcome["reply"].status == 204  # type: ignore[attr-defined]


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
