"""Request heads bounded by the HTTP server (serving.server_for) before any application sees them."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from apimcp.protocol.limits import EndpointLimits
from apimcp.serving import server_for
from tests.support.processes import free_port


class Recorder:
    """An ASGI app answering 200 with the number of headers it saw, and remembering each call."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.calls += 1
        while (await receive()).get("more_body"):
            pass
        body = str(len(scope["headers"])).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


@contextmanager
def serving(app: Recorder, limits: EndpointLimits | None = None) -> Iterator[int]:
    port = free_port()
    server = server_for(app, lambda: None, host="127.0.0.1", port=port, limits=limits)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)


def exchange(port: int, data: bytes, pieces: int = 1, responses: int = 1) -> list[bytes]:
    """Send `data` (in `pieces` writes) and read `responses` answers, or until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        step = -(-len(data) // pieces)
        try:
            for start in range(0, len(data), step):
                sock.sendall(data[start : start + step])
        except OSError:
            pass  # the server stopped reading
        received = b""
        try:
            while received.count(b"HTTP/1.1 ") < responses or not _complete(received, responses):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except OSError:
            pass
    return [b"HTTP/1.1 " + part for part in received.split(b"HTTP/1.1 ")[1:]]


def _complete(received: bytes, responses: int) -> bool:
    last = received.split(b"HTTP/1.1 ")[-1]
    head, sep, body = last.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = next((int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
    return len(body) >= length


def request(headers: bytes = b"", body: bytes = b"") -> bytes:
    return b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n%bcontent-length: %d\r\n\r\n%b" % (headers, len(body), body)


def test_a_megabyte_header_is_431_before_the_app_sees_it() -> None:
    app = Recorder()
    with serving(app) as port:
        (answer,) = exchange(port, request(b"x-big: " + b"a" * (1024 * 1024) + b"\r\n"))
    assert answer.startswith(b"HTTP/1.1 431 ")
    error = orjson.loads(answer.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == -32600 and "max_header_bytes" in error["message"]
    assert app.calls == 0


def test_ten_thousand_headers_are_431_before_the_app_sees_them() -> None:
    app = Recorder()
    with serving(app) as port:
        (answer,) = exchange(port, request(b"".join(b"x-h%d: v\r\n" % i for i in range(10_000))))
    assert answer.startswith(b"HTTP/1.1 431 ") and b"max_header_count" in answer
    assert app.calls == 0


def test_a_head_trickled_in_small_pieces_is_cut_off_at_its_bound() -> None:
    app = Recorder()
    with serving(app) as port:
        answers = exchange(port, b"GET / HTTP/1.1\r\nHost: localhost\r\nx-slow: " + b"a" * 60_000, pieces=60)
    assert answers and answers[0].startswith(b"HTTP/1.1 431 ")  # the head never even ended
    assert app.calls == 0


def test_the_bounds_follow_the_endpoint_limits() -> None:
    app = Recorder()
    with serving(app, EndpointLimits(max_header_count=5, max_header_bytes=200)) as port:
        (fits,) = exchange(port, request(b"a: 1\r\nb: 2\r\nc: 3\r\n"))
        (crowded,) = exchange(port, request(b"a: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\ne: 5\r\n"))
        trickled = exchange(port, b"GET / HTTP/1.1\r\nHost: localhost\r\na: " + b"x" * 10_000, pieces=20)
    assert fits.startswith(b"HTTP/1.1 200 ") and fits.endswith(b"\r\n\r\n5")
    assert crowded.startswith(b"HTTP/1.1 431 ")
    assert trickled[0].startswith(b"HTTP/1.1 431 ")  # 200 bytes + room for the request line, then cut
    assert app.calls == 1


def test_pipelined_requests_with_large_bodies_are_not_taken_for_large_heads() -> None:
    app = Recorder()
    with serving(app) as port:
        body = b"b" * 200_000
        answers = exchange(port, request(body=body) * 3, pieces=7, responses=3)
    assert [a.split(b"\r\n", 1)[0] for a in answers] == [b"HTTP/1.1 200 OK"] * 3
    assert app.calls == 3
