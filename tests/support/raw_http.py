"""HTTP/1.1 spoken by hand over a socket, for tests that send what no well-behaved client would.

`exchange` sends a request head and then body chunks until the server answers or
closes, so a test learns both the answer and how much the server let it send.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import orjson


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    sent: int
    """Body bytes the client managed to send before the server answered or closed."""

    def json(self) -> dict[str, object]:
        parsed: dict[str, object] = orjson.loads(self.body)
        return parsed


def _answered(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)


def exchange(host: str, port: int, head: bytes, chunks: Iterable[bytes] = (), *, timeout: float = 10.0) -> RawResponse:
    """Send `head` then each of `chunks` (stopping as soon as the server answers); read the whole answer."""
    sent = 0
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                if _answered(sock):
                    break
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused and closed; its answer is still to be read
        received = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                received += data
                if _complete(received):
                    break
        except ConnectionResetError:
            pass
    return _parse(received, sent)


def _complete(received: bytes) -> bool:
    head, separator, body = received.partition(b"\r\n\r\n")
    if not separator:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def _parse(received: bytes, sent: int) -> RawResponse:
    head, separator, body = received.partition(b"\r\n\r\n")
    if not separator:
        raise AssertionError(f"no HTTP answer, got {received[:200]!r}")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), headers, body, sent)


def request_head(method: str, path: str, headers: dict[str, str] | None = None, host: str = "127.0.0.1") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked(pieces: Iterable[bytes]) -> Iterable[bytes]:
    """`pieces` in chunked transfer coding (without the final chunk: the server answers before it)."""
    for piece in pieces:
        yield b"%x\r\n%s\r\n" % (len(piece), piece)


def closed_by_the_server(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (within its timeout) rather than kept it open."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
