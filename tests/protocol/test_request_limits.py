"""Request limits (headers, body size and time, JSON depth, batches), each refused before the work it bounds."""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import orjson
import pytest

from apimcp.protocol import EndpointOptions, McpEndpoint, MemorySessionStore
from apimcp.protocol.exchange import encode
from apimcp.protocol.limits import EndpointLimits
from tests.protocol.showcase import Showcase
from tests.support.live_server import live_server
from tests.support.mcp_http import ACCEPT_BOTH, McpHttp, Reply, modern_message
from tests.support.raw_http import closed_by_the_server


@contextmanager
def serving(**limits: Any) -> Iterator[McpHttp]:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(limits=EndpointLimits(**limits)))
    with live_server(endpoint, endpoint.shutdown) as base, McpHttp(f"{base}/mcp") as mcp:
        yield mcp


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


def assert_json_rpc_error(reply: Reply, status: int, code: int, request_id: object = None) -> dict[str, Any]:
    assert reply.status == status, reply
    assert reply.content_type == "application/json"
    assert reply.body["jsonrpc"] == "2.0"
    assert reply.body["id"] == request_id
    assert reply.error["code"] == code
    return reply.error  # type: ignore[no-any-return]


def raw_exchange(url: str, head: bytes, body_pieces: Iterable[bytes] = (), pause: float = 0.0) -> bytes:
    """Send a request head, then body pieces `pause` seconds apart until an answer comes; the answer."""
    host, port = url.removeprefix("http://").split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head)
        for piece in body_pieces:
            if select.select([sock], [], [], pause)[0]:
                break  # answered before the body was complete
            sock.sendall(piece)
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        head_part, _, body = received.partition(b"\r\n\r\n")
        length = int(
            next(line for line in head_part.split(b"\r\n") if line.lower().startswith(b"content-length:"))[15:]
        )
        while len(body) < length:
            body += sock.recv(65536)
        return head_part + b"\r\n\r\n" + body


def deep_json(message: dict[str, Any]) -> bytes:
    """JSON of a message too deep for orjson to encode (the standard library goes deeper)."""
    return json.dumps(message).encode()


# --- headers ---------------------------------------------------------------------------------------


def test_too_many_headers_are_431_with_a_json_rpc_error_body() -> None:
    with serving(max_header_count=20) as mcp:
        crowded = {f"x-filler-{i}": "v" for i in range(30)}
        error = assert_json_rpc_error(mcp.request("tools/list", {}, crowded), 431, -32600)
        assert "max_header_count" in error["message"] and "20" in error["message"]


def test_oversized_headers_are_431_naming_the_limit() -> None:
    with serving(max_header_bytes=2048) as mcp:
        error = assert_json_rpc_error(mcp.request("tools/list", {}, {"x-big": "a" * 3000}), 431, -32600)
        assert "max_header_bytes" in error["message"] and "2048" in error["message"]
        assert mcp.initialize().request("ping").status == 200  # ordinary requests are well under it


# --- body ------------------------------------------------------------------------------------------


def test_an_announced_oversized_body_is_413_before_it_is_read() -> None:
    with serving(max_body_bytes=1000) as mcp:
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
            b"accept: application/json\r\ncontent-length: 1000000000\r\n\r\n"
        )
        # No body at all: a server waiting for one would answer 408 at body_read_seconds (30 s), after the
        # socket's 10 s timeout; a 413 came before either.
        answer = raw_exchange(mcp.url, head)
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
        error = orjson.loads(rest.partition(b"\r\n\r\n")[2])["error"]
        assert error["code"] == -32600 and "max_body_bytes" in error["message"]


def test_a_chunked_body_over_the_limit_is_413_while_reading() -> None:
    with serving(max_body_bytes=10_000) as mcp:

        def pieces() -> Iterator[bytes]:
            yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
            for _ in range(20):
                yield b"x" * 1000
            yield b'"}}'

        headers = {"content-type": "application/json", "accept": ACCEPT_BOTH}
        response = mcp.http.post(mcp.url, content=pieces(), headers=headers)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == -32600


def test_a_body_sent_a_byte_at_a_time_is_408_within_the_total_read_time() -> None:
    with serving(body_read_seconds=1) as mcp:
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        head = (
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
            b"accept: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        )
        offered: list[int] = []

        def byte_by_byte() -> Iterator[bytes]:
            for byte in body:
                offered.append(byte)
                yield bytes([byte])

        started = time.monotonic()
        answer = raw_exchange(mcp.url, head, byte_by_byte(), pause=0.25)
        elapsed = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert b"connection: close" in answer.lower()
        error = orjson.loads(answer.partition(b"\r\n\r\n")[2])["error"]
        assert error["code"] == -32600 and "body_read_seconds" in error["message"]
        # the deadline is total: it came while bytes were still arriving (the whole body takes 12 s), not before 1 s
        assert elapsed >= 1 and len(offered) < len(body)
        assert mcp.initialize().request("ping").status == 200


def _answer_on(sock: socket.socket) -> tuple[bytes, bytes]:
    """The head and body of one answer read from `sock` (its body has a Content-Length)."""
    received = b""
    while b"\r\n\r\n" not in received:
        data = sock.recv(65536)
        assert data, received
        received += data
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(int(line[15:]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head.lower(), body


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (406, b"host: localhost\r\naccept: text/html\r\ncontent-type: application/json\r\n"),
        (415, b"host: localhost\r\naccept: application/json\r\ncontent-type: text/plain\r\n"),
        (413, b"host: localhost\r\naccept: application/json\r\ncontent-type: application/json\r\n"),
        (421, b"host: evil.example.com\r\naccept: application/json\r\ncontent-type: application/json\r\n"),
    ],
    ids=["406-accept", "415-content-type", "413-content-length", "421-host"],
)
def test_one_body_byte_after_an_early_answer_does_not_keep_the_connection_open(status: int, headers: bytes) -> None:
    """A refusal made before the body is read says Connection: close, so that any server ends the connection.

    (live_server is plain uvicorn: without the header it would keep the connection and drain the body.)
    """
    with serving(max_body_bytes=1000) as mcp:
        host, port = mcp.url.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=3) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\n%bcontent-length: 100000000\r\n\r\n" % headers)
            head, body = _answer_on(sock)
            assert head.startswith(b"http/1.1 %d " % status) and b"\r\nconnection: close" in head
            assert orjson.loads(body)["error"]["code"] == -32600
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                sock.sendall(b"{")
            assert closed_by_the_server(sock)  # at once, not after uvicorn's 5 s keep-alive


@pytest.mark.parametrize(
    "headers",
    [
        b"accept: text/html\r\ncontent-type: application/json\r\n",
        b"accept: application/json\r\ncontent-type: text/plain\r\n",
    ],
    ids=["406-accept", "415-content-type"],
)
def test_a_refusal_of_a_whole_small_body_reads_it_and_keeps_the_connection(headers: bytes) -> None:
    """Closing on the unread body used to make the kernel reset the connection, losing the answer now and then."""
    with serving() as mcp:
        host, port = mcp.url.removeprefix("http://").split("/")[0].split(":")
        body = b'[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]'
        request = b"POST /mcp HTTP/1.1\r\nhost: localhost\r\n%bcontent-length: %d\r\n\r\n%b" % (
            headers,
            len(body),
            body,
        )
        with socket.create_connection((host, int(port)), timeout=3) as sock:
            for _ in range(3):
                sock.sendall(request)
                head, answer = _answer_on(sock)
                assert head.split(b" ")[1] in (b"406", b"415") and b"connection: close" not in head
                assert orjson.loads(answer)["error"]["code"] == -32600
            sock.settimeout(0.3)
            assert not closed_by_the_server(sock)


def test_requests_answered_after_their_body_keep_the_connection_alive() -> None:
    with serving() as mcp:
        host, port = mcp.url.removeprefix("http://").split("/")[0].split(":")
        body, headers = modern_message("server/discover")
        fields = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in headers.items())
        request = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n%bcontent-length: %d\r\n\r\n%b" % (
            fields,
            len(orjson.dumps(body)),
            orjson.dumps(body),
        )
        with socket.create_connection((host, int(port)), timeout=3) as sock:
            for _ in range(3):
                sock.sendall(request)
                head, _ = _answer_on(sock)
                assert head.startswith(b"http/1.1 200 ") and b"connection: close" not in head
            sock.settimeout(0.3)
            assert not closed_by_the_server(sock)


# --- JSON depth ------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["session", "2026-07-28"])
def test_tool_arguments_nested_256_levels_deep_are_32602_naming_the_limit(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with serving() as mcp:
        params = {"name": "encode_arguments", "arguments": {"deep": nested(300)}}
        if era == "session":
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params}
            headers = mcp.initialize().headers()
        else:
            message, headers = modern_message("tools/call", params, request_id=41)
        reply = mcp.post(None, headers, raw=deep_json(message))
        error = assert_json_rpc_error(reply, 400, -32602, 41)
        assert "64 levels" in error["message"] and error["data"] == {"maxDepth": 64}
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_arguments_within_the_depth_limit_reach_the_handler_and_encode() -> None:
    with serving() as mcp:
        reply = mcp.initialize().request("tools/call", {"name": "encode_arguments", "arguments": {"d": nested(60)}})
        assert reply.status == 200 and reply.result["content"][0]["text"].endswith(" bytes")


def test_the_envelope_nested_too_deep_is_32600_with_the_id() -> None:
    with serving(max_json_depth=10) as mcp:
        session = mcp.initialize()
        reply = session.post({"jsonrpc": "2.0", "id": "e", "method": "ping", "extra": nested(12)})
        assert_json_rpc_error(reply, 400, -32600, "e")


def test_a_body_nested_beyond_what_the_parser_reads_is_refused_naming_the_limit() -> None:
    with serving() as mcp:
        deep = b"[" * 2000 + b"]" * 2000
        reply = mcp.post(None, raw=b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + deep + b"}}")
        error = assert_json_rpc_error(reply, 400, -32600)
        assert "64 levels" in error["message"]


def test_a_tool_result_too_deep_to_encode_is_a_tool_error_saying_why(caplog: pytest.LogCaptureFixture) -> None:
    with serving() as mcp:
        session = mcp.initialize()
        reply = session.request("tools/call", {"name": "deep_result", "arguments": {"depth": 300}})
        assert reply.status == 200
        assert reply.body["id"] is not None
        assert reply.result == {
            "content": [
                {"type": "text", "text": "The tool's result cannot be sent: it is nested more than 254 levels deep."}
            ],
            "isError": True,
        }
        assert session.request("ping").status == 200
    assert not [r for r in caplog.records if r.exc_info]


def test_any_other_result_that_cannot_be_encoded_is_an_internal_error_saying_why() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    big = orjson.loads(encode({"jsonrpc": "2.0", "id": 7, "result": {"contents": [{"n": 2**70}]}}))
    assert big["error"] == {
        "code": -32603,
        "message": "Internal error: the result could not be encoded as JSON (it holds an integer beyond 64 bits)",
    }
    assert big["id"] == 7
    nested = orjson.loads(encode({"jsonrpc": "2.0", "id": "d", "result": {"messages": deep}}))
    assert nested["error"]["message"].endswith("(it is nested more than 254 levels deep)") and nested["id"] == "d"


# --- batches ---------------------------------------------------------------------------------------


def test_a_batch_of_74000_tools_list_requests_is_refused_before_any_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[object] = []
    plain = Showcase.list_tools

    async def counted(self: Showcase, *args: Any) -> Any:
        listed.append(args)
        return await plain(self, *args)

    monkeypatch.setattr(Showcase, "list_tools", counted)
    with serving() as mcp:
        session = mcp.initialize("2025-03-26")
        batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(74_000)]
        reply = session.post(batch)
        error = assert_json_rpc_error(reply, 400, -32600)
        assert "at most 100 messages" in error["message"] and "74000" in error["message"]
        assert listed == []  # counted, not timed: none of them ran
        assert session.request("tools/list").status == 200 and len(listed) == 1  # (one that runs is counted)


def test_a_batch_within_the_message_limit_is_served() -> None:
    with serving(max_batch_messages=5) as mcp:
        session = mcp.initialize("2025-03-26")
        reply = session.post([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(5)])
        assert reply.status == 200 and [r["id"] for r in reply.body] == [0, 1, 2, 3, 4]
        assert session.post([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(6)]).status == 400


def test_batch_responses_past_their_byte_budget_answer_the_rest_without_running_them() -> None:
    with serving(max_batch_response_bytes=6000) as mcp:
        session = mcp.initialize("2025-03-26")
        page = len(orjson.dumps(session.request("tools/list").body))
        batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list"} for i in range(20)]
        reply = session.post(batch)
        assert reply.status == 200
        assert [r["id"] for r in reply.body] == list(range(20))
        answered = [r for r in reply.body if "result" in r]
        refused = [r for r in reply.body if "error" in r]
        assert len(answered) == 6000 // page + 1  # the response that crosses the budget is still sent
        assert refused and all(r["error"]["code"] == -32600 for r in refused)
        assert "max_batch_response_bytes" in refused[0]["error"]["message"]
        assert len(reply.text) < 6000 + page + len(refused) * 300


# --- refusals are JSON-RPC error bodies ----------------------------------------------------------------


def test_406_409_413_415_and_421_are_json_rpc_error_bodies() -> None:
    with serving(max_body_bytes=1000) as mcp:
        session = mcp.initialize()
        assert_json_rpc_error(session.request("ping", headers={"accept": "text/html"}), 406, -32600)
        assert_json_rpc_error(session.request("ping", headers={"content-type": "text/plain"}), 415, -32600)
        assert_json_rpc_error(session.request("ping", headers={"host": "evil.example.com"}), 421, -32600)
        assert_json_rpc_error(mcp.post(None, headers=session.headers(), raw=b"[" + b" " * 2000 + b"]"), 413, -32600)
        get_headers = session.headers({"accept": "application/json"})
        response = mcp.http.get(mcp.url, headers=get_headers)
        assert response.status_code == 406 and response.json()["error"]["code"] == -32600
        stream_headers = session.headers({"accept": "text/event-stream"})
        with httpx2.Client(timeout=10) as listener, listener.stream("GET", mcp.url, headers=stream_headers) as stream:
            assert stream.status_code == 200
            second = mcp.http.get(mcp.url, headers=stream_headers)
            assert second.status_code == 409
            assert second.headers["content-type"] == "application/json"
            assert second.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "This session already has an open GET stream"},
            }


def test_a_modern_request_to_a_session_only_endpoint_is_refused_with_its_id() -> None:
    endpoint = McpEndpoint(Showcase(), EndpointOptions(stateless_era=False))
    with live_server(endpoint) as base, McpHttp(f"{base}/mcp") as mcp:
        body, headers = modern_message("tools/list", request_id="m-1")
        assert_json_rpc_error(mcp.post(body, headers), 400, -32600, "m-1")


def test_limits_refuse_values_that_would_disable_or_break_them() -> None:
    with pytest.raises(ValueError, match="max_body_bytes must be positive"):
        EndpointLimits(max_body_bytes=0)
    with pytest.raises(ValueError, match="body_read_seconds must be positive"):
        EndpointLimits(body_read_seconds=-1)
    with pytest.raises(ValueError, match="max_json_depth must be at most 200"):
        EndpointLimits(max_json_depth=300)  # orjson could not encode what such a limit lets in
    with pytest.raises(ValueError, match="max_sessions"):
        MemorySessionStore(max_sessions_per_endpoint=0)
