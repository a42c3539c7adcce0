"""The lean HTTP/1.1 client against servers that answer byte for byte what each test needs: kept-alive
connections reused, every way a body can be framed and coded, bounds held, and each failure told as the
call path tells aiohttp's."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import yarl

from apimcp.http1 import client as client_module
from apimcp.http1.client import Http1Client
from apimcp.http1.errors import AnswerTooLarge, BadAnswer, Dropped, NotConnected, Unsendable
from apimcp.safety.addresses import ANYTHING_BUT_METADATA
from apimcp.safety.resolver import PolicyResolver
from tests.support.processes import free_port

pytestmark = pytest.mark.anyio


class Served:
    def __init__(self, port: int) -> None:
        self.url = yarl.URL(f"http://127.0.0.1:{port}")
        self.connections = 0
        self.ended = 0
        """Connections the client closed (or that ended otherwise)."""
        self.heads: list[bytes] = []


@asynccontextmanager
async def raw_server(answer: Callable[[Served, bytes, asyncio.StreamWriter], Awaitable[bool]]) -> AsyncIterator[Served]:
    """A server reading request heads (and a Content-Length body) and letting `answer` write what it likes;
    `answer` returns whether to keep the connection for another request."""
    served = Served(0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)  # fmt: skip
                head += await reader.readexactly(length)
                served.heads.append(head)
                if not await answer(served, head, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            served.ended += 1
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    served.url = yarl.URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    async with server:
        yield served


def client() -> Http1Client:
    return Http1Client(PolicyResolver(ANYTHING_BUT_METADATA))


def ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


async def test_connections_are_kept_alive_and_reused() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(ok(b'{"n": %d}' % len(served.heads), "Content-Type: application/json"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        bodies = [(await lane.request("GET", served.url / "items" / str(i), {}, None, max_bytes=1000)).body
                  for i in range(5)]  # fmt: skip
        assert bodies == [b'{"n": %d}' % n for n in range(1, 6)]
        assert served.connections == 1
        first = served.heads[0].decode()
        assert first.startswith("GET /items/0 HTTP/1.1\r\nHost: 127.0.0.1:")
        assert "Accept-Encoding: gzip, deflate" in first and "User-Agent: Python/" in first
        assert "Content-Length" not in first
    await lane.close()


async def test_a_body_is_sent_with_its_length_and_the_callers_headers() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(ok(b"done"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        headers = {"Content-Type": "application/json", "X-Api-Key": "k"}
        found = await lane.request("POST", served.url.with_path("/items").with_query(q="a b"), headers, b'{"a":1}',
                                   max_bytes=100)  # fmt: skip
        assert (found.status, found.reason, found.body) == (200, "OK", b"done")
        sent = served.heads[0].decode()
        assert sent.startswith("POST /items?q=a+b HTTP/1.1\r\n")
        assert "Content-Type: application/json\r\nX-Api-Key: k\r\n" in sent and "Content-Length: 7\r\n" in sent
        assert sent.endswith('\r\n\r\n{"a":1}')
        await lane.request("POST", served.url, {}, None, max_bytes=100)
        assert "Content-Length: 0\r\n" in served.heads[1].decode()
    await lane.close()


@pytest.mark.parametrize(
    ("coding", "encode"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", lambda b: zlib.compress(b, wbits=-15))],
)
async def test_chunked_and_coded_bodies_are_read_whole_and_decoded(
    coding: str, encode: Callable[[bytes], bytes]
) -> None:
    text = b'{"items": "' + b"x" * 5000 + b'"}'
    coded = encode(text)

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(f"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: {coding}\r\n\r\n".encode())
        for start in range(0, len(coded), 100):
            piece = coded[start : start + 100]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        return True

    lane = client()
    async with raw_server(answer) as served:
        assert (await lane.request("GET", served.url, {}, None, max_bytes=10_000)).body == text
        assert (await lane.request("GET", served.url, {}, None, max_bytes=10_000)).body == text
        assert served.connections == 1
    await lane.close()


async def test_a_body_without_length_ends_with_the_connection() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
        return False

    lane = client()
    async with raw_server(answer) as served:
        assert (await lane.request("GET", served.url, {}, None, max_bytes=100)).body == b"all of it"
        assert (await lane.request("GET", served.url, {}, None, max_bytes=100)).body == b"all of it"
        assert served.connections == 2  # never reused
    await lane.close()


async def test_bodies_beyond_the_bound_are_refused_however_they_come() -> None:
    bomb = gzip.compress(b"0" * 1_000_000)  # 1 MB of zeros in about a kilobyte

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/announced" in head:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n")  # refused before a byte of the body
        elif b"/chunked" in head:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"100\r\n" + b"y" * 256 + b"\r\n")
        else:
            writer.write(ok(bomb, "Content-Encoding: gzip"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        for path in ("/announced", "/chunked", "/bomb"):
            with pytest.raises(AnswerTooLarge):
                await lane.request("GET", served.url.with_path(path), {}, None, max_bytes=200)
        assert served.connections == 3  # a refused answer's connection is not used again
    await lane.close()


async def test_a_closed_kept_alive_connection_is_replaced_for_an_idempotent_request_only() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(ok(b"fine"))
        return False  # closes after each answer, without saying so

    lane = client()
    async with raw_server(answer) as served:
        assert (await lane.request("GET", served.url, {}, None, max_bytes=100)).body == b"fine"
        await asyncio.sleep(0.05)  # the close reaches the client's idle connection
        assert (await lane.request("GET", served.url, {}, None, max_bytes=100)).body == b"fine"
        assert served.connections == 2
    await lane.close()


async def test_a_request_the_backend_drops_unanswered_is_not_sent_again() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if len(served.heads) == 1:
            writer.write(ok(b"first"))
            return True
        return False  # the second request is read, then the connection closed without an answer

    lane = client()
    async with raw_server(answer) as served:
        await lane.request("POST", served.url, {}, b"1", max_bytes=100)
        with pytest.raises(Dropped):
            await lane.request("POST", served.url, {}, b"2", max_bytes=100)
        assert len(served.heads) == 2  # sent once
    await lane.close()


async def test_what_cannot_be_read_or_sent_or_reached_is_said() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/many" in head:
            writer.write(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: 1\r\n" % n for n in range(300)) + b"\r\n")
        else:
            writer.write(b"NOT HTTP AT ALL\r\n\r\n")
        return True

    lane = client()
    async with raw_server(answer) as served:
        with pytest.raises(BadAnswer, match="beyond 256"):
            await lane.request("GET", served.url.with_path("/many"), {}, None, max_bytes=100)
        with pytest.raises(BadAnswer, match=r"not HTTP/1\.1"):
            await lane.request("GET", served.url, {}, None, max_bytes=100)
        with pytest.raises(Unsendable, match="line break"):
            await lane.request("GET", served.url, {"X-Bad": "a\r\nInjected: 1"}, None, max_bytes=100)
        for name in ("X-Bad\n", "X Bad", ""):  # a name ending in a line break once passed a `$` pattern
            with pytest.raises(Unsendable, match="not a header name"):
                await lane.request("GET", served.url, {name: "1"}, None, max_bytes=100)
        with pytest.raises(Unsendable, match="not an HTTP method"):
            await lane.request("GET\n", served.url, {}, None, max_bytes=100)
        smuggled = yarl.URL(f"{served.url}/a HTTP/1.1\r\nX: 1", encoded=True)
        with pytest.raises(Unsendable, match="control character"):
            await lane.request("GET", smuggled, {}, None, max_bytes=100)
    with pytest.raises(NotConnected) as refused:
        await lane.request("GET", yarl.URL(f"http://127.0.0.1:{free_port()}/"), {}, None, max_bytes=100)
    assert not refused.value.resolving
    with pytest.raises(NotConnected) as unresolved:
        await lane.request("GET", yarl.URL("http://no-such-host.invalid/"), {}, None, max_bytes=100)
    assert unresolved.value.resolving
    await lane.close()


async def test_a_cancelled_exchange_closes_its_connection() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if len(served.heads) > 1:
            writer.write(ok(b"late but whole"))
        return True  # the first request is never answered

    lane = client()
    async with raw_server(answer) as served:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await lane.request("GET", served.url, {}, None, max_bytes=100)
        assert (await lane.request("GET", served.url, {}, None, max_bytes=100)).body == b"late but whole"
        assert served.connections == 2
    await lane.close()


async def test_informational_answers_before_the_answer_are_passed_over() -> None:
    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
        writer.write(ok(b"the answer", "Content-Type: text/plain"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        for _ in range(2):
            found = await lane.request("GET", served.url, {}, None, max_bytes=100)
            assert (found.status, found.body, "Link" in found.headers) == (200, b"the answer", False)
        assert served.connections == 1
    await lane.close()


@asynccontextmanager
async def stream_server(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[yarl.URL]:
    """A server whose `handle` reads and writes what it likes on each connection."""

    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handle(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(guarded, "127.0.0.1", 0)
    async with server:
        yield yarl.URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")


async def test_a_connection_answered_before_its_request_was_all_sent_is_not_kept() -> None:
    """A backend that answers a large body's head at once (401) and then reads the rest of the body as requests
    (a buggy one) would answer the next caller on that connection with the answer to the first caller's bytes."""
    smuggled = b"GET /first-callers-secret HTTP/1.1\r\nHost: x\r\n\r\n"
    body = b"p" * (2 * 1024 * 1024) + b"\r\n" + smuggled
    connections = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        seen = b""
        while data := await reader.read(65536):  # what follows is read as requests, each answered with its path
            seen = seen[-64:] + data
            start = seen.find(b"GET /")
            if start >= 0 and b"\r\n\r\n" in seen[start:]:
                path = seen[start:].split()[1]
                seen = b""
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path))
                await writer.drain()

    lane = client()
    async with stream_server(handle) as url:
        assert (await lane.request("POST", url, {}, body, max_bytes=100)).status == 401
        second = await asyncio.wait_for(lane.request("GET", url / "mine", {}, None, max_bytes=100), 5)
        assert (second.status, second.body) == (401, b"")  # its own answer, on a connection of its own
        assert connections == 2
    await lane.close()


@pytest.mark.parametrize(
    ("head", "says"),
    [
        (b"HTTP/1.1 200 " + b"r" * 4_000_000, "reason phrase is beyond 1024 bytes"),
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"v" * 4_000_000, "headers or trailers are beyond 65536 bytes"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-Trailer: " + b"t" * 4_000_000,
            "headers or trailers are beyond 65536 bytes",
        ),
    ],
)
async def test_a_head_or_trailer_that_never_ends_is_refused_at_its_bound(head: bytes, says: str) -> None:
    """httptools keeps a header whole until it ends: the bound holds on the bytes as they arrive."""

    async def answer(served: Served, _: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(head)
        return True

    lane = client()
    async with raw_server(answer) as served:
        with pytest.raises(BadAnswer, match=says):
            await lane.request("GET", served.url, {}, None, max_bytes=1_000_000)
    await lane.close()


async def test_a_body_read_to_the_end_of_a_reset_connection_is_no_answer() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"balance": 1000')
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closed with a reset
        writer.transport.abort()

    lane = client()
    async with stream_server(handle) as url:
        with pytest.raises(Dropped):
            await lane.request("GET", url, {}, None, max_bytes=1000)
    await lane.close()


async def test_bodies_are_framed_and_decoded_as_the_rfcs_say() -> None:
    members = gzip.compress(b'{"items": [1, 2') + gzip.compress(b", 3]}")
    whole = gzip.compress(b"x" * 5000)

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/members" in head:
            writer.write(ok(members, "Content-Encoding: gzip"))
        elif b"/truncated" in head:
            writer.write(ok(whole[: len(whole) // 2], "Content-Encoding: gzip"))
        elif b"/not-modified" in head:  # a 304 may say the size of what it does not send
            writer.write(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 20000000\r\n\r\n")
        elif b"/trailer" in head:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n"
                         b"Content-Encoding: gzip\r\n\r\n")  # fmt: skip
        else:  # not chunked as its last coding: the body ends with the connection
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nthe whole body")
            return False
        return True

    lane = client()
    async with raw_server(answer) as served:
        got = await lane.request("GET", served.url / "members", {}, None, max_bytes=100)
        assert got.body == b'{"items": [1, 2, 3]}'  # every member, not the first alone
        with pytest.raises(BadAnswer, match="compressed body is corrupt"):
            await lane.request("GET", served.url / "truncated", {}, None, max_bytes=10_000)
        got = await lane.request("GET", served.url / "not-modified", {}, None, max_bytes=1000)
        assert (got.status, got.body) == (304, b"")
        got = await lane.request("GET", served.url / "trailer", {}, None, max_bytes=100)
        assert (got.body, got.headers.get("Content-Encoding")) == (b"hi", None)  # a trailer adds no header
        got = await lane.request("GET", served.url / "identity", {}, None, max_bytes=100)
        assert got.body == b"the whole body"
        with pytest.raises(Unsendable, match="HEAD"):  # its answer has no body whatever it says: aiohttp sends it
            await lane.request("HEAD", served.url, {}, None, max_bytes=100)
    await lane.close()


async def test_a_connection_idle_too_long_is_closed_rather_than_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "IDLE_SECONDS", 0.1)

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(ok(b"fine"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        await lane.request("GET", served.url, {}, None, max_bytes=100)
        await lane.request("GET", served.url, {}, None, max_bytes=100)
        assert served.connections == 1
        await asyncio.sleep(0.2)
        await lane.request("GET", served.url, {}, None, max_bytes=100)
        assert served.connections == 2
    await lane.close()


async def test_connections_idle_too_long_are_closed_though_their_backend_is_not_called_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The finding: an idle connection was closed only when its origin was called again, so a backend called once
    (and servers that keep idle connections) held up to 64 of them until the gateway stopped."""
    monkeypatch.setattr(client_module, "IDLE_SECONDS", 0.1)

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.05)  # so that the five calls overlap, each on a connection of its own
        writer.write(ok(b"fine"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        await asyncio.gather(*(lane.request("GET", served.url, {}, None, max_bytes=100) for _ in range(5)))
        assert served.connections == 5
        for _ in range(100):  # swept within two idle periods
            if served.ended == 5:
                break
            await asyncio.sleep(0.02)
        assert served.ended == 5 and not lane._idle  # type: ignore[attr-defined]
    await lane.close()


async def test_stacked_codings_are_undone_and_one_it_cannot_read_is_refused() -> None:
    """The finding: `gzip, gzip` and codings the client never asked for (br) were passed on as they came, unread:
    the masking of secrets saw compressed bytes, and the client got the secret, compressed."""
    twice = gzip.compress(gzip.compress(b'{"token": "s3cr3t"}'))

    async def answer(served: Served, head: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/twice" in head:
            writer.write(ok(twice, "Content-Encoding: gzip, gzip"))
        elif b"/identity" in head:
            writer.write(ok(gzip.compress(b"plain"), "Content-Encoding: identity, gzip"))
        elif b"/many" in head:
            writer.write(ok(b"x", "Content-Encoding: identity, identity, identity, identity, identity"))
        else:
            writer.write(ok(b"\x1b\x00\x00", "Content-Encoding: br"))
        return True

    lane = client()
    async with raw_server(answer) as served:
        assert (await lane.request("GET", served.url / "twice", {}, None, max_bytes=100)).body == b'{"token": "s3cr3t"}'
        assert (await lane.request("GET", served.url / "identity", {}, None, max_bytes=100)).body == b"plain"
        with pytest.raises(BadAnswer, match=r"a content coding this gateway does not read \(br\)"):
            await lane.request("GET", served.url / "brotli", {}, None, max_bytes=100)
        with pytest.raises(BadAnswer, match="more than 4 content codings"):
            await lane.request("GET", served.url / "many", {}, None, max_bytes=100)
    await lane.close()
