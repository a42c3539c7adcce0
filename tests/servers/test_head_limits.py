"""The bound every apimcp server puts on request heads, below the application (uvicorn with httptools)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from apimcp.servers.factory import server_for
from apimcp.servers.head_limits import HeadLimits
from tests.support.processes import free_port
from tests.support.raw_http import closed_by_the_server, exchange, request_head


async def _hello(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def serving(limits: HeadLimits) -> Iterator[int]:
    port = free_port()
    server = server_for(_hello, lambda: None, host="127.0.0.1", port=port, head_limits=limits)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # late in a long suite, a first collection of the heap comes first
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _header_drip(size: int) -> Iterator[bytes]:
    piece = b"a" * 65536
    for _ in range(size // len(piece)):
        yield piece


def test_a_100_mb_header_is_refused_once_the_head_passes_its_bound() -> None:
    with serving(HeadLimits(max_bytes=64 * 1024)) as port:
        head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
        answer = exchange("127.0.0.1", port, head, _header_drip(100 * 1024 * 1024))
        assert answer.status == 431
        assert answer.json()["detail"] == "the request head exceeds 65536 bytes"
        assert answer.sent < 16 * 1024 * 1024  # what the kernel's socket buffers took, not 100 MB
        assert exchange("127.0.0.1", port, request_head("GET", "/")).status == 200  # the server is fine


def test_twenty_thousand_header_fields_are_refused() -> None:
    with serving(HeadLimits()) as port:
        fields = b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
        pieces = [fields[i : i + 4096] for i in range(0, len(fields), 4096)]
        answer = exchange("127.0.0.1", port, b"GET / HTTP/1.1\r\nHost: x\r\n", pieces)
        assert answer.status == 431


def test_a_head_that_drips_in_gets_408_and_a_silent_connection_is_closed() -> None:
    with serving(HeadLimits(seconds=0.5)) as port:
        started = time.monotonic()
        answer = exchange("127.0.0.1", port, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert answer.status == 408
        assert 0.4 < time.monotonic() - started < 5  # timing-ok: ten times the 0.5 s, half the exchange's timeout
        with socket.create_connection(("127.0.0.1", port), timeout=5) as silent:
            assert silent.recv(1) == b""  # closed by the server after the delay (or the 5 s timeout fails it)


def _answer(sock: socket.socket) -> bytes:
    received = b""
    while not received.endswith(b"\r\n\r\nok"):
        data = sock.recv(4096)
        assert data, received
        received += data
    return received


def test_ordinary_requests_and_keep_alive_are_untouched() -> None:
    with serving(HeadLimits(max_bytes=4096, seconds=0.5)) as port, socket.create_connection(("127.0.0.1", port)) as s:
        for _ in range(3):
            s.sendall(request_head("GET", "/", {"X-Fine": "v" * 3000}))
            assert _answer(s).startswith(b"HTTP/1.1 200")
        time.sleep(0.8)  # idle between requests is uvicorn's keep-alive business (5 s), not a head timeout
        s.sendall(request_head("GET", "/"))
        assert _answer(s).startswith(b"HTTP/1.1 200")


async def _read_all(scope: Any, receive: Any, send: Any) -> None:
    while (await receive()).get("more_body"):
        pass
    await _hello(scope, receive, send)


def test_pipelined_requests_with_large_bodies_are_not_taken_for_large_heads() -> None:
    # Reads that begin inside a body are not head bytes, even when a pipelined head follows in them.
    port = free_port()
    server = server_for(_read_all, lambda: None, host="127.0.0.1", port=port, head_limits=HeadLimits(max_bytes=4096))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        body = b"b" * 200_000
        one = b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n%b" % (len(body), body)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            data = one * 3
            for start in range(0, len(data), 30_000):
                sock.sendall(data[start : start + 30_000])
            answers = b""
            while answers.count(b"\r\n\r\nok") < 3:
                chunk = sock.recv(65536)
                assert chunk, answers
                answers += chunk
        assert answers.count(b"HTTP/1.1 200 OK") == 3
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_head_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HeadLimits(max_bytes=0)


def test_a_body_that_never_comes_gets_408_and_one_that_trickles_is_left_to_the_application() -> None:
    """Headers announcing a body, then silence: the application would wait for it forever."""
    port = free_port()
    server = server_for(_read_all, lambda: None, host="127.0.0.1", port=port, head_limits=HeadLimits(seconds=0.5))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        started = time.monotonic()
        silent = exchange("127.0.0.1", port, b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n")
        assert silent.status == 408
        assert silent.json()["detail"] == "the request body stopped arriving for 0.5 s"
        assert 0.4 < time.monotonic() - started < 5  # timing-ok: ten times the 0.5 s, half the exchange's timeout

        def trickle() -> Iterator[bytes]:
            for _ in range(20):
                time.sleep(0.05)  # a silence far below the 0.5 s allowed, a second in all: more than 0.5 s
                yield b"b" * 5

        slow = exchange("127.0.0.1", port, b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n", trickle())
        assert slow.status == 200  # a second in all: the total body time is the application's to bound
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_one_body_byte_after_an_early_answer_does_not_keep_the_connection_open() -> None:
    """An answer sent before the body arrived ends the connection: the rest of the body is not wanted.

    uvicorn would keep the connection and discard the body, each byte of which cancels its keep-alive timer.
    """
    with serving(HeadLimits(seconds=1)) as port, socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 100000000\r\n\r\n")
        assert _answer(s).startswith(b"HTTP/1.1 200")  # _hello answers without reading the body
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(b"b")
        assert closed_by_the_server(s)  # at once: well before uvicorn's 5 s keep-alive, let alone 15 s


def test_requests_with_bodies_keep_their_connection_alive() -> None:
    """Bodies read by the application, or complete before the answer, leave keep-alive as it was."""
    port = free_port()
    server = server_for(_read_all, lambda: None, host="127.0.0.1", port=port, head_limits=HeadLimits(seconds=1))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            for size in (0, 10, 100_000):
                s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: %d\r\n\r\n%b" % (size, b"b" * size))
                assert _answer(s).startswith(b"HTTP/1.1 200")
            s.settimeout(0.3)
            assert not closed_by_the_server(s)  # still open, waiting for the next request
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    with serving(HeadLimits()) as port, socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        for _ in range(3):  # the body arrives with the head, so it is complete before the unread answer
            s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\n\r\nhello")
            assert _answer(s).startswith(b"HTTP/1.1 200")


async def _large(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    body = b"x" * (20 * 1024 * 1024)
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", str(len(body)).encode())]}
    )
    await send({"type": "http.response.body", "body": body})


def test_a_client_that_reads_nothing_of_its_answer_is_dropped() -> None:
    """The finding: a client that sent a request and never read the 20 MB answer kept its connection, and about
    18 MB of the answer buffered, for ever: closing waits for the bytes to be written, and the timer stopped
    watching a closing connection."""
    port = free_port()
    server = server_for(_large, lambda: None, host="127.0.0.1", port=port, head_limits=HeadLimits(seconds=0.5))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(),), daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        with socket.socket() as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(("127.0.0.1", port))
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            held = False
            for _ in range(1000):  # the answer is written, then stalls; dropped within three checks of that
                held = held or len(server.server_state.connections) == 1
                if held and not server.server_state.connections:
                    break
                time.sleep(0.01)
            assert held and not server.server_state.connections
    finally:
        server.should_exit = True
        thread.join(timeout=10)
