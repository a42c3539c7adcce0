"""Connections kept per origin, opened to the addresses the gateway's resolver gives (so its address policy
holds here as in aiohttp), at most `limit` exchanges at once."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Mapping

import aiohappyeyeballs
import yarl
from aiohttp.abc import AbstractResolver

from apimcp.http1.answer import Answer
from apimcp.http1.connection import Connection
from apimcp.http1.errors import Dropped, NotConnected, Unsendable
from apimcp.http1.wire import request_head

IDEMPOTENT = frozenset(("GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"))
"""Methods sent again on a new connection when a kept-alive one turns out closed before answering (RFC 9110)."""
MAX_IDLE_PER_ORIGIN = 64
IDLE_SECONDS = 15.0
"""aiohttp's keep-alive timeout: a connection idle longer is closed rather than used, since servers close theirs
after a while, and a request that meets a closing connection fails unless it may be sent again."""
HAPPY_EYEBALLS_DELAY = 0.25
"""aiohttp's: an IPv6 address that has not connected within it is raced by the next address."""


class Http1Client:
    def __init__(self, resolver: AbstractResolver, limit: int = 256, dns_ttl: float = 60.0) -> None:
        self._resolver = resolver
        self._slots = asyncio.Semaphore(limit)
        self._dns_ttl = dns_ttl
        self._addresses: dict[tuple[str, int], tuple[float, list[tuple[socket.AddressFamily, str]]]] = {}
        self._idle: dict[tuple[str, int], list[tuple[float, Connection]]] = {}
        self._sweep: asyncio.TimerHandle | None = None
        """Closes what has been idle too long, while anything is idle: a backend called once (and servers that keep
        idle connections) would otherwise hold them until the gateway stops."""
        self._closed = False

    async def request(
        self, method: str, url: yarl.URL, headers: Mapping[str, str], body: bytes | None, *, max_bytes: int
    ) -> Answer:
        """The whole answer to one request (`url` an absolute, encoded http URL); raises what `errors.py` names,
        what the resolver raises for a name its policy refuses, and whatever cancels the caller (the connection
        closed)."""
        if method == "HEAD":  # its answer has no body whatever it says: the parser is not told so (aiohttp sends it)
            raise Unsendable("HEAD is not sent by the lean client")
        head = request_head(method, url, headers, body)
        origin = (url.raw_host or "", url.port or 80)
        async with self._slots:
            connection, reused = await self._connection(origin)
            try:
                answer = await connection.exchange(head, body, max_bytes)
            except Dropped as dropped:
                if not (reused and dropped.before_any_byte and method in IDEMPOTENT):
                    raise
                connection = await self._connect(origin)  # the backend had closed the kept-alive connection
                answer = await connection.exchange(head, body, max_bytes)
            if connection.reusable and not self._closed:
                idle = self._idle.setdefault(origin, [])
                if len(idle) < MAX_IDLE_PER_ORIGIN:
                    idle.append((time.monotonic(), connection))
                    if self._sweep is None:
                        self._sweep = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._swept)
                    return answer
            connection.close()
            return answer

    async def _connection(self, origin: tuple[str, int]) -> tuple[Connection, bool]:
        idle = self._idle.get(origin)
        if idle:
            fresh = time.monotonic() - IDLE_SECONDS
            while idle:
                since, connection = idle.pop()
                if since < fresh:  # the newest is too old: so are the rest
                    connection.close()
                    for _, old in idle:
                        old.close()
                    idle.clear()
                elif not connection.closed:
                    return connection, True
        return await self._connect(origin), False

    def _swept(self) -> None:
        self._sweep = None
        fresh = time.monotonic() - IDLE_SECONDS
        for origin, idle in list(self._idle.items()):
            kept = []
            for since, connection in idle:
                if since < fresh:
                    connection.close()
                elif not connection.closed:
                    kept.append((since, connection))
            if kept:
                self._idle[origin] = kept
            else:
                del self._idle[origin]
        if self._idle and not self._closed:
            self._sweep = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._swept)

    async def _connect(self, origin: tuple[str, int]) -> Connection:
        """A new connection to the first address that accepts, tried as aiohttp tries them (Happy Eyeballs)."""
        port = origin[1]
        infos: list[aiohappyeyeballs.AddrInfoType] = [
            (
                family,
                socket.SOCK_STREAM,
                socket.IPPROTO_TCP,
                "",
                (host, port) if family == socket.AF_INET else (host, port, 0, 0),
            )
            for family, host in await self._resolved(origin)
        ]
        try:
            sock = await aiohappyeyeballs.start_connection(infos, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY)
        except OSError as exc:
            raise NotConnected(os.strerror(exc.errno) if exc.errno else str(exc) or "no address answered") from None
        _, connection = await asyncio.get_running_loop().create_connection(Connection, sock=sock)
        return connection

    async def _resolved(self, origin: tuple[str, int]) -> list[tuple[socket.AddressFamily, str]]:
        cached = self._addresses.get(origin)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        try:  # a name the address policy refuses raises its own error (not an OSError), passed on as it is
            found = await self._resolver.resolve(origin[0], origin[1], family=socket.AF_UNSPEC)
        except OSError as exc:
            raise NotConnected(str(exc), resolving=True) from None
        addresses = [(socket.AddressFamily(item["family"]), str(item["host"])) for item in found]
        if len(self._addresses) > 10_000:  # names come from plans: bounded, but never without limit
            self._addresses.clear()
        self._addresses[origin] = (now + self._dns_ttl, addresses)
        return addresses

    async def close(self) -> None:
        self._closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for idle in self._idle.values():
            for _, connection in idle:
                connection.close()
        self._idle.clear()
