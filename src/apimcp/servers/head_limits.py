"""Bounds on what a connection may hold every apimcp server applies, in its HTTP protocol.

uvicorn's httptools protocol keeps whatever head a client sends (a 100 MB header
value, twenty thousand fields) and waits for it, and for a body, forever: memory
and connections a client holds without ever making a request. The protocol here
counts the bytes of a head still being received and refuses it beyond `max_bytes`
(431); it refuses a head that takes longer than `seconds` to `2 * seconds` to
arrive, and a body that stops arriving for as long (408); it closes a connection
that says nothing, and one answered before its body arrived; it drops one whose
client reads nothing of its answer for two to three times as long. One timer per
connection does the timing, so a request costs nothing for it. It works below the
application, so it protects the gateway and the control plane alike; the
applications keep their own, finer and exact checks (header bytes and count, total
body time, problem details).

Only reads that begin and end inside a head are counted: the read that starts a
head and the one that completes it are not, since either may also hold body bytes
(the previous request's, or this one's), which are no head. So a head of
`max_bytes` always passes, and one may reach `max_bytes` plus those two reads
(uvicorn reads up to 256 KiB at once) before it is refused.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson

KiB = 1024


@dataclass(frozen=True, slots=True)
class HeadLimits:
    max_bytes: int = 64 * KiB
    """Request line and header fields of one request, as received: 431 and the connection closed above (the
    reads that start and complete a head are not counted: see the module's docstring)."""
    seconds: float = 10.0
    """A connection that sends nothing for this long is closed; a head still incomplete at two checks this far
    apart (so after `seconds` to twice that), or a body of which nothing arrived between two checks, gets 408
    and the connection closed; one whose client read nothing of its answer at three checks in a row is dropped."""

    def __post_init__(self) -> None:
        if self.max_bytes <= 0 or self.seconds <= 0:
            raise ValueError("head limits must be positive")


def bounded_protocol(limits: HeadLimits) -> type[asyncio.Protocol] | None:
    """uvicorn's httptools protocol with `limits`; None when httptools is missing (then use h11's size bound)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415
    except ImportError:
        return None

    class BoundedHeadProtocol(HttpToolsProtocol):
        """Counts a head's bytes while it arrives and times it; everything else is uvicorn's.

        One timer per connection, not per request: every `seconds` it checks whether the same head is
        still incomplete as at the previous check (then 408), or whether a new connection said nothing.
        A response complete before its request's body closes the connection.
        """

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._head_open = False
            self._head_bytes = 0
            self._messages = 0
            self._open_at_last_check = -1
            self._received = 0
            self._received_at_last_check = 0
            self._buffered_at_last_check = 0
            self._stalls = 0
            super().connection_made(transport)
            self._head_timer: asyncio.TimerHandle | None = self.loop.call_later(limits.seconds, self._check_head)

        def data_received(self, data: bytes) -> None:
            open_before = self._head_open
            self._received += len(data)
            super().data_received(data)
            if open_before and self._head_open:  # the chunk is all head: the head neither began nor ended in it
                self._head_bytes += len(data)
                if self._head_bytes > limits.max_bytes:
                    self._refuse(431, "Request Header Fields Too Large",
                                 f"the request head exceeds {limits.max_bytes} bytes")  # fmt: skip

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_open = True
            self._head_bytes = 0
            self._messages += 1

        def on_headers_complete(self) -> None:
            self._head_open = False
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            # Answered before its body arrived (413, 415...): uvicorn would keep the connection and discard
            # the rest of the body, each piece of which cancels its keep-alive timer, for ever. Nobody wants
            # that body. (A pipelined request's cycle has no complete response: it is left alone.)
            cycle = self.cycle
            if cycle.more_body and cycle.response_complete:
                self.transport.close()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            super().connection_lost(exc)

        def _check_head(self) -> None:
            self._head_timer = None
            # A client reading nothing of its answer would keep the connection and the answer's bytes for ever:
            # closing waits for them to be written, and the keep-alive timer's close does too.
            # Unchanged at three checks in a row, not two: a slow client reading exactly what the application wrote
            # meanwhile would look stalled once by chance, hardly twice.
            buffered = self.transport.get_write_buffer_size()
            self._stalls = self._stalls + 1 if buffered > 0 and buffered == self._buffered_at_last_check else 0
            self._buffered_at_last_check = buffered
            if self._stalls >= 2:
                self.transport.abort()
                return
            if self.transport.is_closing():
                if buffered:  # closing once what is left is read: still watched
                    self._head_timer = self.loop.call_later(limits.seconds, self._check_head)
                return
            progressed = self._received != self._received_at_last_check
            self._received_at_last_check = self._received
            if self._head_open:
                if self._open_at_last_check == self._messages:
                    seconds = f"{limits.seconds:g}"
                    self._refuse(408, "Request Timeout", f"the request head did not arrive within {seconds} s")
                    return
                self._open_at_last_check = self._messages
            elif not progressed and self._body_awaited():
                seconds = f"{limits.seconds:g}"
                self._refuse(408, "Request Timeout", f"the request body stopped arriving for {seconds} s")
                return
            elif self._messages == 0:
                self.transport.close()  # connected and said nothing
                return
            self._head_timer = self.loop.call_later(limits.seconds, self._check_head)

        def _body_awaited(self) -> bool:
            """Whether the current request's body is still incomplete and nothing has been answered yet."""
            cycle = self.cycle
            return cycle is not None and cycle.more_body and not cycle.response_started

        def _refuse(self, status: int, title: str, detail: str) -> None:
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_complete and not self._body_awaited():
                self.transport.close()  # a pipelined head while a response is still being written: no room to answer
                return
            body = orjson.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail})
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/problem+json\r\ncontent-length: %d\r\n"
                b"connection: close\r\n\r\n%s" % (status, title.encode(), len(body), body)
            )
            self.transport.close()

    return BoundedHeadProtocol


def uvicorn_settings(limits: HeadLimits) -> dict[str, Any]:
    """The uvicorn.Config arguments that apply `limits`."""
    protocol = bounded_protocol(limits)
    if protocol is not None:
        return {"http": protocol}
    return {"http": "h11", "h11_max_incomplete_event_size": limits.max_bytes}
