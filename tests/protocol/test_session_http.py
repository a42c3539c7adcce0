"""Session-era Streamable HTTP (2024-11-05 ... 2025-11-25) checked on the wire."""

from __future__ import annotations

import re
import threading

import httpx2
import orjson
import pytest

from apimcp.protocol import McpEndpoint
from tests.support.mcp_http import ACCEPT_BOTH, SESSION_VERSIONS, McpHttp, first_server_request, sse_messages
from tests.support.raw_http import exchange, request_head

VISIBLE_ASCII = re.compile(r"^[\x21-\x7e]+$")


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_initialize_echoes_a_supported_version_and_mints_a_session(mcp: McpHttp, version: str) -> None:
    session = mcp.initialize(version)
    result = session.init_reply.result
    assert result["protocolVersion"] == version
    assert VISIBLE_ASCII.match(session.id) and len(session.id) >= 32
    assert result["serverInfo"]["name"] == "showcase"
    assert result["instructions"] == "Use the tools to test the engine."
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert ("completions" in caps) is (version != "2024-11-05")
    assert "resultType" not in result


@pytest.mark.parametrize("offered", ["2026-07-28", "1999-01-01", "2025-13-45"])
def test_initialize_counter_offers_the_newest_session_version(mcp: McpHttp, offered: str) -> None:
    session = mcp.initialize(offered)
    assert session.version == "2025-11-25"


def test_session_ids_are_unique(mcp: McpHttp) -> None:
    assert len({mcp.initialize().id for _ in range(20)}) == 20


@pytest.mark.parametrize(
    ("version", "title", "icons"),
    [("2024-11-05", False, False), ("2025-06-18", True, False), ("2025-11-25", True, True)],
)
def test_server_info_fields_follow_the_revision(mcp: McpHttp, version: str, title: bool, icons: bool) -> None:
    info = mcp.initialize(version).init_reply.result["serverInfo"]
    assert ("title" in info) is title
    assert ("icons" in info) is icons
    assert ("websiteUrl" in info) is icons


def test_initialize_with_bad_params_is_refused(mcp: McpHttp) -> None:
    reply = mcp.request("initialize", {"protocolVersion": 2025, "capabilities": {}})
    assert reply.status == 400
    assert reply.error["code"] == -32602
    assert "protocolVersion" in reply.error["message"]


def test_request_without_session_is_400(mcp: McpHttp) -> None:
    reply = mcp.request("tools/list", {}, {"mcp-protocol-version": "2025-11-25"})
    assert reply.status == 400
    assert "MCP-Session-Id" in reply.error["message"]


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_unknown_session_is_404(mcp: McpHttp, version: str) -> None:
    reply = mcp.request("tools/list", {}, {"mcp-session-id": "no-such-session"})
    assert reply.status == 404


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_delete_ends_the_session(mcp: McpHttp, version: str) -> None:
    session = mcp.initialize(version)
    deleted = mcp.http.delete(mcp.url, headers=session.headers())
    assert deleted.status_code == 200
    assert session.request("ping").status == 404
    assert mcp.http.delete(mcp.url, headers=session.headers()).status_code == 404


def test_a_delete_while_the_get_stream_is_open_leaves_no_backlog_behind(mcp: McpHttp, endpoint: McpEndpoint) -> None:
    """The finding: the GET stream, closing after the DELETE, made the session's backlog again (kept for the idle
    timeout, 30 minutes): a client looping initialize, GET, DELETE filled the backlog, pushing out live sessions'."""
    backlog = endpoint.options.events.backlog  # type: ignore[union-attr]
    session = mcp.initialize()
    headers = {"accept": "text/event-stream", **session.headers()}
    with httpx2.Client(timeout=10) as listener, listener.stream("GET", mcp.url, headers=headers) as stream:
        assert stream.status_code == 200
        assert mcp.http.delete(mcp.url, headers=session.headers()).status_code == 200
        for _ in stream.iter_lines():  # the stream ends with the session
            pass
    for _ in range(50):  # the stream's end is noted in the background: long enough for it to show
        if session.id in backlog._boxes:  # type: ignore[attr-defined]
            break
        threading.Event().wait(0.01)
    assert session.id not in backlog._boxes  # type: ignore[attr-defined]


def test_delete_and_get_without_session_are_400(mcp: McpHttp) -> None:
    assert mcp.http.delete(mcp.url).status_code == 400
    assert mcp.http.get(mcp.url, headers={"accept": "text/event-stream"}).status_code == 400


def test_other_http_methods_are_405(mcp: McpHttp) -> None:
    response = mcp.http.put(mcp.url, content=b"{}")
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_notifications_and_responses_get_202_without_body(mcp: McpHttp, version: str) -> None:
    session = mcp.initialize(version)
    reply = session.notify("notifications/roots/list_changed")
    assert reply.status == 202 and reply.text == ""
    stray = session.post({"jsonrpc": "2.0", "id": 9999, "result": {}})
    assert stray.status == 202 and stray.text == ""


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_ping(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).request("ping")
    assert reply.status == 200 and reply.result == {}


def test_json_or_sse_per_accept(mcp: McpHttp) -> None:
    session = mcp.initialize()
    plain = session.request("tools/list", {}, {"accept": "application/json"})
    assert plain.content_type == "application/json"
    streamed = session.request("tools/list", {}, {"accept": "text/event-stream"})
    assert streamed.content_type.startswith("text/event-stream")
    assert streamed.result["tools"] == plain.result["tools"]
    refused = session.request("tools/list", {}, {"accept": "text/html"})
    assert refused.status == 406


def test_progress_switches_the_response_to_sse(mcp: McpHttp) -> None:
    session = mcp.initialize()
    reply = session.request("tools/call", {"name": "progress", "_meta": {"progressToken": "tok"}})
    assert reply.content_type.startswith("text/event-stream")
    assert reply.headers["x-accel-buffering"] == "no"
    progress = reply.notifications("notifications/progress")
    assert [p["params"]["progress"] for p in progress] == [0, 50, 100]
    assert all(p["params"]["progressToken"] == "tok" for p in progress)
    assert reply.result["content"] == [{"type": "text", "text": "done"}]


def test_progress_message_is_dropped_for_2024_11_05(mcp: McpHttp) -> None:
    reply = mcp.initialize("2024-11-05").request("tools/call", {"name": "progress", "_meta": {"progressToken": 1}})
    params = reply.notifications("notifications/progress")[0]["params"]
    assert "message" not in params
    assert params == {"progressToken": 1, "progress": 0, "total": 100}


def test_no_progress_without_a_token(mcp: McpHttp) -> None:
    reply = mcp.initialize().request("tools/call", {"name": "progress"})
    assert reply.content_type == "application/json"
    assert reply.notifications() == []


def test_logging_set_level_filters_log_messages(mcp: McpHttp) -> None:
    session = mcp.initialize()
    everything = session.request("tools/call", {"name": "logs"})
    assert [n["params"]["level"] for n in everything.notifications("notifications/message")] == [
        "debug",
        "info",
        "error",
    ]
    assert session.request("logging/setLevel", {"level": "error"}).result == {}
    filtered = session.request("tools/call", {"name": "logs"})
    messages = filtered.notifications("notifications/message")
    assert [m["params"] for m in messages] == [{"level": "error", "data": {"problem": "error message"}}]
    bad = session.request("logging/setLevel", {"level": "loud"})
    assert bad.status == 200 and bad.error["code"] == -32602


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_unknown_resource_is_32002_in_session_revisions(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).request("resources/read", {"uri": "test://missing"})
    assert reply.status == 200
    assert reply.error["code"] == -32002
    assert reply.error["data"] == {"uri": "test://missing"}
    assert reply.body["id"] is not None


def test_unknown_method_is_32601_in_band(mcp: McpHttp) -> None:
    reply = mcp.initialize().request("server/discover")
    assert reply.status == 200 and reply.error["code"] == -32601


def test_unknown_tool_is_a_protocol_error_and_tool_failures_are_results(mcp: McpHttp) -> None:
    session = mcp.initialize()
    unknown = session.request("tools/call", {"name": "nope"})
    assert unknown.error["code"] == -32602 and "nope" in unknown.error["message"]
    failed = session.request("tools/call", {"name": "fail"})
    assert failed.result == {"content": [{"type": "text", "text": "the backend said no"}], "isError": True}


def test_handler_crash_is_an_internal_error_without_details(mcp: McpHttp) -> None:
    reply = mcp.initialize().request("tools/call", {"name": "crash"})
    assert reply.error == {"code": -32603, "message": "Internal error"}
    assert "secret" not in reply.text


def test_bad_params_name_the_field(mcp: McpHttp) -> None:
    session = mcp.initialize()
    reply = session.request("tools/call", {"name": 5})
    assert reply.error["code"] == -32602 and reply.error["data"] == {"field": "name"}
    reply = session.request("tools/list", {"cursor": 7})
    assert reply.error["data"] == {"field": "cursor"}


def test_pagination(mcp: McpHttp) -> None:
    session = mcp.initialize()
    first = session.request("tools/list", {}).result
    assert first["nextCursor"] == "page-2"
    second = session.request("tools/list", {"cursor": "page-2"}).result
    assert "nextCursor" not in second
    names = [t["name"] for t in first["tools"] + second["tools"]]
    assert len(names) == len(set(names)) > 10


@pytest.mark.parametrize("version", SESSION_VERSIONS)
def test_completion(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).request(
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "al"}},
    )
    assert reply.result == {"completion": {"values": ["alice", "albert"], "total": 3, "hasMore": False}}


def test_parse_error_is_400_32700(mcp: McpHttp) -> None:
    reply = mcp.post(None, raw=b"{not json")
    assert reply.status == 400
    assert reply.body == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": reply.error["message"]}}


@pytest.mark.parametrize(
    ("body", "echoed_id"),
    [
        ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, 7),
        ({"jsonrpc": "2.0", "id": "a", "method": 12}, "a"),
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1]}, 3),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ("just a string", None),
    ],
)
def test_invalid_requests_are_400_32600_echoing_the_id(mcp: McpHttp, body: object, echoed_id: object) -> None:
    session = mcp.initialize()
    reply = session.post(body)
    assert reply.status == 400
    assert reply.error["code"] == -32600
    assert reply.body["id"] == echoed_id


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_protocol_version_header_is_validated(mcp: McpHttp, version: str) -> None:
    session = mcp.initialize(version)
    assert session.request("ping", headers={"mcp-protocol-version": "1999-01-01"}).status == 400
    other = "2025-06-18" if version == "2025-11-25" else "2025-11-25"
    assert session.request("ping", headers={"mcp-protocol-version": other}).status == 400
    assert session.request("ping", headers={"mcp-protocol-version": version}).status == 200


def test_missing_protocol_version_header_is_accepted(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-11-25")
    reply = mcp.request("ping", None, {"mcp-session-id": session.id})
    assert reply.status == 200


def test_batches_are_accepted_in_2025_03_26_sessions(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-03-26")
    reply = session.post(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}},
            {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        ]
    )
    assert reply.status == 200
    responses = {r["id"]: r for r in reply.body}
    assert responses[1]["result"] == {}
    assert responses[2]["result"]["content"] == [{"type": "text", "text": "x"}]
    assert responses[3]["error"]["code"] == -32601
    only_notes = session.post([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
    assert only_notes.status == 202


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_batches_are_refused_outside_2025_03_26(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert reply.status == 400
    assert reply.error["code"] == -32600
    assert "2025-03-26" in reply.error["message"]


def test_batches_never_carry_initialize(mcp: McpHttp) -> None:
    reply = mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}])
    assert reply.status == 400 and reply.error["code"] == -32600


def test_empty_batch_is_invalid(mcp: McpHttp) -> None:
    assert mcp.initialize("2025-03-26").post([]).status == 400


def test_origin_and_host_are_checked(mcp: McpHttp) -> None:
    session = mcp.initialize()
    evil = session.request("ping", headers={"origin": "http://evil.example.com"})
    assert evil.status == 403
    assert session.request("ping", headers={"origin": "http://localhost:3000"}).status == 200
    assert session.request("ping", headers={"host": "evil.example.com"}).status == 421
    assert session.request("ping", headers={"origin": "null"}).status == 403


def test_content_type_and_size_limits(mcp: McpHttp, url: str) -> None:
    session = mcp.initialize()
    assert session.request("ping", headers={"content-type": "text/plain"}).status == 415
    assert session.request("ping").status == 200  # the same connection, kept
    # A large body is refused unread and ends its connection: the client stops sending once answered (a
    # client that keeps sending may see the connection reset before the answer: docs/security.md).
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    headers = {**session.headers(), "Content-Type": "application/json", "Accept": "application/json",
               "Content-Length": str(5 * 1024 * 1024)}  # fmt: skip
    big = exchange(host, int(port), request_head("POST", "/mcp", headers, host="localhost"), [b"x" * 65536] * 80)
    assert big.status == 413 and big.headers.get("connection") == "close"
    assert big.sent < 5 * 1024 * 1024


@pytest.mark.parametrize(
    ("tool", "capabilities", "method", "answer", "expected"),
    [
        ("elicit", {"elicitation": {}}, "elicitation/create", {"action": "accept", "content": {"name": "Ada"}},
         "Hello, Ada!"),
        ("sample", {"sampling": {}}, "sampling/createMessage",
         {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}, "model said: hi"),
        ("roots", {"roots": {}}, "roots/list", {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]},
         "file:///a,file:///b"),
    ],
)  # fmt: skip
def test_server_to_client_requests_travel_on_the_post_stream(
    mcp: McpHttp, tool: str, capabilities: dict[str, object], method: str, answer: object, expected: str
) -> None:
    session = mcp.initialize("2025-11-25", capabilities)
    body = orjson.dumps({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": tool}})
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
    with mcp.http.stream("POST", mcp.url, content=body, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        request, rest = first_server_request(response.iter_lines())
        assert request["method"] == method
        if method == "elicitation/create":
            assert request["params"]["mode"] == "form"  # type: ignore[index]
        answered = session.post({"jsonrpc": "2.0", "id": request["id"], "result": answer})
        assert answered.status == 202
        final = next(iter(rest))  # type: ignore[call-overload]
    assert final["id"] == 50
    assert final["result"]["content"][0]["text"] == expected


def test_elicitation_request_has_no_mode_in_2025_06_18(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-06-18", {"elicitation": {}})
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "elicit"}})
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
    with mcp.http.stream("POST", mcp.url, content=body, headers=headers) as response:
        request, rest = first_server_request(response.iter_lines())
        assert "mode" not in request["params"]  # type: ignore[operator]
        session.post({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}})
        final = next(iter(rest))  # type: ignore[call-overload]
    assert final["result"]["content"][0]["text"] == "Hello, None!"


def test_client_error_answer_surfaces_as_an_error(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-11-25", {"sampling": {}})
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sample"}})
    headers = {"content-type": "application/json", "accept": ACCEPT_BOTH, **session.headers()}
    with mcp.http.stream("POST", mcp.url, content=body, headers=headers) as response:
        request, rest = first_server_request(response.iter_lines())
        session.post({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -1, "message": "User said no"}})
        final = next(iter(rest))  # type: ignore[call-overload]
    assert "User said no" in final["error"]["message"]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_undeclared_client_capability_is_an_error_not_a_request(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version).request("tools/call", {"name": "elicit"})
    assert reply.status == 200
    assert reply.error["code"] == -32600
    assert reply.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert reply.notifications() == []


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_revisions_without_elicitation_say_so(mcp: McpHttp, version: str) -> None:
    reply = mcp.initialize(version, {"elicitation": {}}).request("tools/call", {"name": "elicit"})
    assert reply.error["code"] == -32600
    assert f"Protocol {version} has no elicitation" in reply.error["message"]


def test_input_needs_an_sse_capable_accept(mcp: McpHttp) -> None:
    session = mcp.initialize("2025-11-25", {"elicitation": {}})
    reply = session.request("tools/call", {"name": "elicit"}, {"accept": "application/json"})
    assert reply.error["code"] == -32600
    assert "text/event-stream" in reply.error["message"]


def test_url_elicitation_required_is_32042_only_in_2025_11_25(mcp: McpHttp) -> None:
    reply = mcp.initialize("2025-11-25").request("tools/call", {"name": "url_elicitation"})
    assert reply.error["code"] == -32042
    assert reply.error["data"]["elicitations"] == [
        {"mode": "url", "message": "Connect your account", "url": "https://example.com/connect", "elicitationId": "e1"}
    ]
    older = mcp.initialize("2025-06-18").request("tools/call", {"name": "url_elicitation"})
    assert older.error["code"] == -32600
    assert "https://example.com/connect" in older.error["message"]


def test_cancellation_stops_the_request(mcp: McpHttp, showcase: object) -> None:
    session = mcp.initialize()
    outcome: dict[str, object] = {}
    call = {"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {"name": "slow"}}

    def run() -> None:
        outcome["reply"] = session.post(call)

    before = len(showcase.cancelled)  # type: ignore[attr-defined]
    worker = threading.Thread(target=run)
    worker.start()
    for _ in range(500):  # the call may not have reached the handler yet: repeat until it is cancelled
        cancelled = session.notify("notifications/cancelled", {"requestId": "slow-1", "reason": "test"})
        assert cancelled.status == 202
        if len(showcase.cancelled) > before:  # type: ignore[attr-defined]
            break
        worker.join(0.01)
    worker.join(5)
    assert not worker.is_alive()
    assert showcase.cancelled[before:] == ["slow-1"]  # type: ignore[attr-defined]
    reply = outcome["reply"]
    assert reply.messages == []  # type: ignore[attr-defined]
    # The finding: a POST of a request answered 204 (2025-03-26 on: JSON or an SSE stream, which ends with nothing)
    assert reply.status == 200 and reply.headers["content-type"] == "text/event-stream"  # type: ignore[attr-defined]


def test_get_stream_carries_list_changes_and_subscribed_updates(mcp: McpHttp) -> None:
    session = mcp.initialize()
    assert session.request("resources/subscribe", {"uri": "test://text"}).result == {}
    assert session.request("resources/subscribe", {"uri": "other://x"}).error["code"] == -32002
    headers = {"accept": "text/event-stream", **session.headers()}
    with httpx2.Client(timeout=10) as listener, listener.stream("GET", mcp.url, headers=headers) as stream:
        assert stream.status_code == 200
        second = mcp.http.get(mcp.url, headers=headers)
        assert second.status_code == 409
        assert session.request("tools/call", {"name": "notify_changes"}).status == 200
        messages = sse_messages(stream.iter_lines())
        received = [next(messages) for _ in range(4)]
    methods = [m["method"] for m in received]
    assert methods == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    ]
    assert received[3]["params"] == {"uri": "test://text"}
    assert session.request("resources/unsubscribe", {"uri": "test://text"}).result == {}
