"""One kept-alive connection to a backend, one exchange at a time, its answer parsed by httptools."""

from __future__ import annotations

import asyncio
import zlib

import httptools

from apimcp.http1.answer import Answer, RawHeaders, decoded
from apimcp.http1.errors import AnswerTooLarge, BadAnswer, Dropped

MAX_HEADERS = 256
MAX_HEAD_BYTES = 64 * 1024


class Connection(asyncio.Protocol):
    """Feeds what arrives to a response parser; `exchange` writes a request and waits for its whole answer."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._chunks: list[bytes] = []
        self._size = 0
        self._max_bytes = 0
        self._received = False
        self._headers_done = False
        self._failed = False
        self.closed = False
        self.reusable = False
        """Whether the last exchange left the connection ready for another (kept alive, whole answer read)."""

    # --- the caller's side --------------------------------------------------------------------------

    async def exchange(self, head: bytes, body: bytes | None, max_bytes: int) -> Answer:
        """Send one request and return its answer; any failure leaves the connection closed."""
        if self._transport is None or self.closed:
            raise Dropped("the connection is closed", before_any_byte=True)
        self.reusable = False
        self._reason, self._headers, self._head_bytes = b"", [], 0
        self._chunks, self._size, self._max_bytes = [], 0, max_bytes
        self._received = self._headers_done = self._failed = False
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        self._transport.write(head + body if body else head)
        try:
            answer: Answer = await waiter
        except BaseException:
            self.close()  # cancelled, or failed: what is left of this answer must not meet the next request
            raise
        finally:
            self._waiter = None
        return answer

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    # --- asyncio's side -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted with a next request
            return
        self._received = True
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(BadAnswer(f"the answer is not HTTP/1.1 ({type(exc).__name__})"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if self._headers_done and self._reads_to_close():
            self._complete()  # no length, not chunked: the body ends with the connection
            return
        dropped = Dropped("the connection closed before the whole answer", before_any_byte=not self._received)
        waiter.set_exception(dropped)

    # --- httptools' callbacks -----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # a second answer to one request: the connection cannot be trusted with the next

    def on_status(self, status: bytes) -> None:
        self._reason += status

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._failed:
            return
        self._head_bytes += len(name) + len(value)
        if len(self._headers) >= MAX_HEADERS or self._head_bytes > MAX_HEAD_BYTES:
            self._fail(BadAnswer(f"the answer's headers are beyond {MAX_HEADERS} or {MAX_HEAD_BYTES} bytes"))
            return
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._headers_done = True
        for name, value in self._headers:
            if name.lower() == b"content-length" and value.isdigit() and int(value) > self._max_bytes:
                self._fail(AnswerTooLarge())  # said before a byte of it is read

    def on_body(self, body: bytes) -> None:
        if self._failed:
            return
        self._size += len(body)
        if self._size > self._max_bytes:
            self._fail(AnswerTooLarge())
            return
        self._chunks.append(body)

    def on_message_complete(self) -> None:
        if self._failed:
            return
        if 100 <= self._parser.get_status_code() < 200:  # informational (103 Early Hints...): the answer follows
            self._reason, self._headers, self._head_bytes, self._chunks, self._size = b"", [], 0, [], 0
            self._headers_done = False
            return
        self._complete(keep_alive=self._parser.should_keep_alive())

    # --- within ---------------------------------------------------------------------------------------

    def _reads_to_close(self) -> bool:
        names = {name.lower() for name, _ in self._headers}
        return b"content-length" not in names and b"transfer-encoding" not in names

    def _complete(self, keep_alive: bool = False) -> None:
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        headers = RawHeaders(self._headers)
        try:
            body = decoded(b"".join(self._chunks), headers.get("Content-Encoding"), self._max_bytes)
        except zlib.error:
            self._fail(BadAnswer("the answer's compressed body is corrupt"))
            return
        except AnswerTooLarge as exc:
            self._fail(exc)
            return
        self.reusable = keep_alive and not self.closed
        status = self._parser.get_status_code()
        waiter.set_result(Answer(status, self._reason.decode("latin-1"), headers, body))

    def _fail(self, exc: Exception) -> None:
        self._failed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()
