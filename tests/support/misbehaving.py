"""TCP servers on loopback that misbehave on purpose: they drip an answer byte by byte, stay silent, or reset.

Each runs on its own threads until the `with` block ends, which closes every connection it holds.
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/yaml\r\nContent-Length: 100000\r\n\r\n"


@dataclass
class Misbehaving:
    host: str
    port: int
    accepted: int = 0
    ended: list[float] = field(default_factory=list)
    """When each connection ended (the client went away, or the server stopped), time.monotonic()."""
    lasted: list[float] = field(default_factory=list)
    """How long each connection lasted, in seconds."""
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


Handler = Callable[[socket.socket, Misbehaving], None]


def _read_request(connection: socket.socket, server: Misbehaving) -> None:
    """Read until the end of the request head (or a stop)."""
    data = b""
    while b"\r\n\r\n" not in data and not server.stop.is_set():
        ready, _, _ = select.select([connection], [], [], 0.05)
        if ready:
            chunk = connection.recv(4096)
            if not chunk:
                return
            data += chunk


def dripping(interval: float = 0.2) -> Handler:
    """Answers a head promising 100 kB, then one byte every `interval` seconds, for as long as the client waits:
    a read timeout never fires, only a deadline on the whole fetch ends it."""

    def handle(connection: socket.socket, server: Misbehaving) -> None:
        _read_request(connection, server)
        try:
            connection.sendall(HEAD)
            while not server.stop.wait(interval):
                connection.sendall(b"x")
        except OSError:
            pass  # the client went away

    return handle


def silent(connection: socket.socket, server: Misbehaving) -> None:
    """Accepts and never answers."""
    while not server.stop.wait(0.05):
        ready, _, _ = select.select([connection], [], [], 0)
        if ready and not connection.recv(4096):
            return  # the client went away


def resetting(connection: socket.socket, server: Misbehaving) -> None:
    """Resets the connection as soon as the request arrives."""
    _read_request(connection, server)
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@contextmanager
def misbehaving(handle: Handler, host: str = "127.0.0.1") -> Iterator[Misbehaving]:
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, 0))
    listener.listen(128)
    server = Misbehaving(host, listener.getsockname()[1])
    workers: list[threading.Thread] = []

    def serve(connection: socket.socket) -> None:
        started = time.monotonic()
        try:
            handle(connection, server)
        finally:
            connection.close()
            with server.lock:
                server.ended.append(time.monotonic())
                server.lasted.append(server.ended[-1] - started)

    def accept() -> None:
        while not server.stop.is_set():
            ready, _, _ = select.select([listener], [], [], 0.05)
            if not ready:
                continue
            connection, _ = listener.accept()
            with server.lock:
                server.accepted += 1
            worker = threading.Thread(target=serve, args=(connection,), daemon=True)
            workers.append(worker)
            worker.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        server.stop.set()
        acceptor.join(5)
        for worker in workers:
            worker.join(5)
        listener.close()
