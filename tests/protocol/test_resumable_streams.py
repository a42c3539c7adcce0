"""Resumable session streams (2025-03-26 and later): event ids and a `retry:` hint on every stream, and a GET
with `Last-Event-ID` that replays what a client missed: the rest of a POST's stream (following it until its
response) or of its GET stream, never another session's; and a GET stream, new or resumed, that first hears what
changed while its session had none open."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx2
import orjson

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from apimcp.protocol.limits import EndpointLimits
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import ACCEPT_BOTH, McpHttp, Session, get_stream, sse_events

LISTS_CHANGED = [f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")]


def _elicit_then_drop(mcp: McpHttp, session: Session) -> tuple[str, dict[str, Any], list[str]]:
    """POST an eliciting call, read the request event and drop the stream: (its id, the request, raw lines)."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "elicit"}})
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
    raw: list[str] = []
    with httpx2.Client(timeout=10) as http, http.stream("POST", mcp.url, content=body, headers=headers) as response:
        lines = response.iter_lines()

        def recorded() -> Iterator[str]:
            for line in lines:
                raw.append(line)
                yield line

        event_id, request = next(sse_events(recorded()))
    assert event_id is not None
    return event_id, request, raw


def test_a_dropped_post_stream_resumes_with_its_response(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-11-25", {"elicitation": {}})
    event_id, request, raw = _elicit_then_drop(mcp, session)
    assert raw[0] == "retry: 1000"  # reconnect after a second when the stream drops
    assert request["method"] == "elicitation/create"
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Lu"}}}
    assert session.post(answer).status == 202
    headers = {"accept": "text/event-stream", "last-event-id": event_id, **session.headers()}
    with httpx2.Client(timeout=10) as http, http.stream("GET", mcp.url, headers=headers) as resumed:
        assert resumed.status_code == 200
        events = list(sse_events(resumed.iter_lines()))  # ends with the POST's response
    assert len(events) == 1
    next_id, final = events[0]
    stream, number = event_id.rsplit(".", 1)
    assert next_id == f"{stream}.{int(number) + 1}"
    assert final["id"] == 5 and final["result"]["content"][0]["text"] == "Hello, Lu!"


def test_a_resumed_post_stream_waits_for_a_response_still_to_come(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-11-25", {"elicitation": {}})
    event_id, request, _ = _elicit_then_drop(mcp, session)
    headers = {"accept": "text/event-stream", "last-event-id": event_id, **session.headers()}
    with httpx2.Client(timeout=10) as http, http.stream("GET", mcp.url, headers=headers) as resumed:
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "Io"}}}
        assert session.post(answer).status == 202  # answered after the client came back
        events = list(sse_events(resumed.iter_lines()))
    assert [final["result"]["content"][0]["text"] for _, final in events] == ["Hello, Io!"]


def test_a_get_stream_replays_what_came_after_the_last_event_seen(mcp: McpHttp) -> None:
    session = mcp.initialize()
    headers = {"accept": "text/event-stream", **session.headers()}
    with httpx2.Client(timeout=10) as http, http.stream("GET", mcp.url, headers=headers) as stream:
        assert session.request("tools/call", {"name": "notify_changes"}).status == 200
        events = sse_events(stream.iter_lines())
        seen = [next(events) for _ in range(3)]
    second_id = seen[1][0]
    assert second_id is not None and all(event_id for event_id, _ in seen)
    with (
        httpx2.Client(timeout=10) as http,
        http.stream("GET", mcp.url, headers={**headers, "last-event-id": second_id}) as resumed,
    ):
        events = sse_events(resumed.iter_lines())
        replayed = next(events)
    assert replayed == seen[2]  # the same id and message, after the one the client had


def test_another_sessions_event_id_replays_nothing(mcp: McpHttp) -> None:
    owner = mcp.initialize("2025-11-25", {"elicitation": {}})
    event_id, request, _ = _elicit_then_drop(mcp, owner)
    other = mcp.initialize()
    headers = {"accept": "text/event-stream", "last-event-id": event_id, **other.headers()}
    with httpx2.Client(timeout=10) as http, http.stream("GET", mcp.url, headers=headers) as stream:
        assert other.request("tools/call", {"name": "notify_changes"}).status == 200
        _, first = next(sse_events(stream.iter_lines()))
    assert first["method"] == "notifications/tools/list_changed"  # a new GET stream, not the owner's events
    owner.post({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}})


def test_sessions_of_2024_11_05_get_no_event_ids(mcp: McpHttp) -> None:
    session = mcp.initialize("2024-11-05")
    with httpx2.Client(timeout=10) as http:
        headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": "progress", "_meta": {"progressToken": "p"}}})  # fmt: skip
        with http.stream("POST", mcp.url, content=body, headers=headers) as response:
            lines = list(response.iter_lines())
    assert not any(line.startswith(("id:", "retry:")) for line in lines)
    assert any(line.startswith("data:") for line in lines)


def test_a_change_while_a_session_has_no_get_stream_reaches_its_resumed_stream(mcp: McpHttp) -> None:
    session = mcp.initialize()
    with get_stream(mcp.url, session) as events:
        assert session.request("tools/call", {"name": "notify_changes"}).status == 200
        last_seen = [next(events) for _ in range(3)][-1][0]
    other = mcp.initialize()
    for _ in range(2):  # the plan changes twice while the client reconnects
        assert other.request("tools/call", {"name": "notify_changes"}).status == 200
    with get_stream(mcp.url, session, last_seen) as resumed:
        caught_up = [next(resumed) for _ in range(3)]
    assert [message["method"] for _, message in caught_up] == LISTS_CHANGED  # once each
    assert all(event_id for event_id, _ in caught_up)  # resumable in turn


def test_a_change_before_a_session_s_first_get_stream_reaches_it(mcp: McpHttp) -> None:
    session = mcp.initialize()
    assert session.request("resources/subscribe", {"uri": "test://text"}).status == 200
    other = mcp.initialize()
    assert other.request("tools/call", {"name": "notify_changes"}).status == 200
    with get_stream(mcp.url, session) as events:
        first = [next(events)[1] for _ in range(4)]
    assert [message["method"] for message in first] == [*LISTS_CHANGED, "notifications/resources/updated"]
    assert first[3]["params"] == {"uri": "test://text"}  # of what it subscribed to only


def test_a_session_resumes_as_many_streams_at_once_as_it_may_have_requests(showcase: Showcase) -> None:
    """The finding: resuming one POST stream a hundred times was never counted, so one client held as many
    followers (and, with Redis, pooled connections) as it liked."""
    endpoint = McpEndpoint(showcase, EndpointOptions(sessions=MemorySessionStore(), client_request_timeout=5,
                                                     limits=EndpointLimits(max_requests_per_session=2)))  # fmt: skip
    with live_server(endpoint, endpoint.shutdown) as base, McpHttp(f"{base}/mcp") as mcp:
        session = mcp.initialize("2025-11-25", {"elicitation": {}})
        event_id, request, _ = _elicit_then_drop(mcp, session)
        headers = {"accept": "text/event-stream", "last-event-id": event_id, **session.headers()}
        with httpx2.Client(timeout=10) as http, ExitStack() as streams:
            followed = [streams.enter_context(http.stream("GET", mcp.url, headers=headers)) for _ in range(2)]
            assert [stream.status_code for stream in followed] == [200, 200]
            third = http.get(mcp.url, headers=headers)
            assert third.status_code == 429 and "already follows 2 resumed streams" in third.text
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}
        assert session.post(answer).status == 202
        with httpx2.Client(timeout=10) as http, http.stream("GET", mcp.url, headers=headers) as again:
            assert again.status_code == 200  # the others ended: room again
