"""One kept-alive connection to a backend, one exchange at a time, its answer parsed by httptools."""

from __future__ import annotations

import asyncio
import zlib

import httptools

from apimcp.http1.answer import Answer, RawHeaders, decoded
from apimcp.http1.errors import AnswerTooLarge, BadAnswer, Dropped

MAX_HEADERS = 256
MAX_HEAD_BYTES = 64 * 1024
"""Of an answer's status line and headers (and of its trailers), counted as they arrive: httptools keeps a header
whole until it ends, so a bound checked on whole headers alone would come after the memory was spent."""
MAX_REASON_BYTES = 1024
HEAD_ON_THE_WIRE = MAX_HEAD_BYTES + MAX_REASON_BYTES + 4 * MAX_HEADERS + 64
"""What a head within the bounds above takes at most, its status line, colons and line breaks included."""
CHUNK_FRAMING = 256
"""Bytes on the wire around one chunk of a chunked body, at most: its size line, extensions and line breaks."""
MAX_INFORMATIONAL = 16
"""1xx answers before the answer (103 Early Hints...)."""
NO_BODY = frozenset((204, 304))


class Connection(asyncio.Protocol):
    """Feeds what arrives to a response parser; `exchange` writes a request and waits for its whole answer."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._wire_bytes = 0
        self._chunk_count = 0
        self._informational = 0
        self._chunks: list[bytes] = []
        self._size = 0
        self._max_bytes = 0
        self._received = False
        self._sent_body = False
        self._answered_early = False
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
        self._wire_bytes = self._chunk_count = self._informational = 0
        self._sent_body = bool(body)
        self._received = self._answered_early = self._headers_done = self._failed = False
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
        if not self._received:
            self._received = True
            # answered before the request was all written (a 401 or 413 to a large body): the backend may read the
            # rest as a next request, whose answer would reach the next caller; such a connection is not kept
            transport = self._transport
            self._answered_early = transport is not None and transport.get_write_buffer_size() > 0
        self._wire_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._fail(BadAnswer(f"the answer is not HTTP/1.1 ({type(exc).__name__})"))
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done() and self._wire_bytes > self._wire_bound():
            # checked after each read, so what httptools holds of an unfinished header is one read past the bound
            self._fail(BadAnswer(f"the answer's status line, headers or trailers are beyond {MAX_HEAD_BYTES} bytes"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        waiter = self._waiter
        if waiter is None or waiter.done():
            return
        if exc is None and self._headers_done and self._reads_to_close():
            self._complete()  # no length, not chunked: the body ends with the connection (closed, not reset)
            return
        dropped = Dropped("the connection closed before the whole answer", before_any_byte=not self._received)
        waiter.set_exception(dropped)

    # --- httptools' callbacks -----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # a second answer to one request: the connection cannot be trusted with the next

    def on_status(self, status: bytes) -> None:
        self._reason += status
        if len(self._reason) > MAX_REASON_BYTES:
            self._fail(BadAnswer(f"the answer's reason phrase is beyond {MAX_REASON_BYTES} bytes"))

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._failed:
            return
        self._head_bytes += len(name) + len(value)
        if len(self._headers) >= MAX_HEADERS or self._head_bytes > MAX_HEAD_BYTES:
            self._fail(BadAnswer(f"the answer's headers are beyond {MAX_HEADERS} or {MAX_HEAD_BYTES} bytes"))
            return
        if not self._headers_done:  # a trailer (after a chunked body) is not a header: it may not add or replace one
            self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._headers_done = True
        self._head_bytes = 0  # trailers have a bound of their own
        status = self._parser.get_status_code()
        if status in NO_BODY or status < 200:
            return  # a 304's Content-Length is the size of what it did not send
        for name, value in self._headers:
            if name.lower() == b"content-length" and value.isdigit() and int(value) > self._max_bytes:
                self._fail(AnswerTooLarge())  # said before a byte of it is read

    def on_chunk_header(self) -> None:
        self._chunk_count += 1

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
            self._informational += 1
            if self._informational > MAX_INFORMATIONAL:
                self._fail(BadAnswer(f"the backend sent more than {MAX_INFORMATIONAL} informational answers"))
                return
            self._reason, self._headers, self._head_bytes, self._chunks, self._size = b"", [], 0, [], 0
            self._wire_bytes, self._chunk_count, self._headers_done = 0, 0, False
            return
        self._complete(keep_alive=self._parser.should_keep_alive())

    # --- within ---------------------------------------------------------------------------------------

    def _reads_to_close(self) -> bool:
        """Whether the body ends with the connection (RFC 9112 6.3): no length, and chunked not its last coding."""
        codings: list[bytes] = []
        for name, value in self._headers:
            lowered = name.lower()
            if lowered == b"content-length":
                return False
            if lowered == b"transfer-encoding":
                codings += (coding.strip().lower() for coding in value.split(b","))
        return not codings or codings[-1] != b"chunked"

    def _wire_bound(self) -> int:
        """Bytes this answer may have taken on the wire so far: its head; then also the body read so far, the
        framing of its chunks, and trailers (a trailer that never ends is held up to this bound, no more)."""
        if not self._headers_done:
            return HEAD_ON_THE_WIRE
        return 2 * HEAD_ON_THE_WIRE + self._size + CHUNK_FRAMING * self._chunk_count

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
        except BadAnswer as exc:  # a coding it cannot undo
            self._fail(exc)
            return
        except AnswerTooLarge as exc:
            self._fail(exc)
            return
        status = self._parser.get_status_code()
        # a refusal of a request with a body may come before the backend read that body (a 401 or 413 at its
        # head), and the kernel may have taken all of it: whether the backend will read the rest as a next
        # request cannot be known, so the connection is not kept
        refused_body = self._sent_body and status >= 400
        self.reusable = keep_alive and not self.closed and not self._answered_early and not refused_body
        waiter.set_result(Answer(status, self._reason.decode("latin-1"), headers, body))

    def _fail(self, exc: Exception) -> None:
        self._failed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.close()
