"""A bound on the request head (request line and header fields) every apimcp server applies, in its HTTP protocol.

uvicorn's httptools protocol keeps whatever head a client sends (a 100 MB header
value, twenty thousand fields) and waits for it forever: memory and connections a
client holds without ever making a request. The protocol here counts the bytes of
a head still being received and refuses it beyond `max_bytes` (431), and gives a
connection `seconds` to deliver a complete head (408), then closes it. It works
below the application, so it protects the gateway and the control plane alike; the
applications keep their own, finer checks (field count, problem details).
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
    """Request line and header fields of one request, as received: 431 and the connection closed above."""
    seconds: float = 10.0
    """From connecting (or from the first byte of a following request) to a complete head: 408 and closed after."""

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
        """Counts a head's bytes while it arrives and times it; everything else is uvicorn's."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._head_open = False
            self._head_bytes = 0
            self._head_timer: asyncio.TimerHandle | None = None
            super().connection_made(transport)
            self._arm_head_timer()

        def data_received(self, data: bytes) -> None:
            open_before = self._head_open
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
            self._arm_head_timer()

        def on_headers_complete(self) -> None:
            self._head_open = False
            self._cancel_head_timer()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head_timer()
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(limits.seconds, self._head_too_slow)

        def _cancel_head_timer(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_too_slow(self) -> None:
            self._head_timer = None
            if self._head_open:
                self._refuse(408, "Request Timeout", f"the request head did not arrive within {limits.seconds:g} s")
            elif self.cycle is None and not self.transport.is_closing():
                self.transport.close()  # connected and said nothing

        def _refuse(self, status: int, title: str, detail: str) -> None:
            self._cancel_head_timer()
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_complete:
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
