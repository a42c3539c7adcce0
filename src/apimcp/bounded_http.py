"""uvicorn's HTTP protocol with request heads bounded while they arrive, before any app sees them.

Measured with uvicorn 0.54 and httptools 0.9 (uvicorn[standard]): a 10 MiB header
and 100,000 header lines both reach the application, which can only refuse them
once they are in memory; a header value sent in pieces is even re-concatenated
at every piece. uvicorn has no setting for this with httptools
(`h11_max_incomplete_event_size` bounds only the slower h11 parser).

This subclass keeps memory bounded for the price of a counter per read: the
bytes of reads that arrive while a request head is incomplete are counted, and
past `max_header_bytes` (plus room for the request line and line ends) the
client gets 431 and the connection is closed. A head that completes within one
read (at most 256 KiB) is not counted; its lines are, once parsed (a length
check). The exact bounds, with a JSON-RPC error body, are the MCP endpoint's
own check (endpoint.py), which also protects apps served by other servers.
"""

from __future__ import annotations

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from apimcp.protocol.limits import EndpointLimits

REQUEST_LINE_ALLOWANCE = 8 * 1024
"""Head bytes allowed on top of the header names and values: the request line and separators."""


class _HeadTooLarge(Exception):
    pass


class HeadBoundedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol refusing heads with more than `max_header_count` lines or about `max_header_bytes`."""

    max_header_count = EndpointLimits().max_header_count
    max_header_bytes = EndpointLimits().max_header_bytes

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._reading_head = True
        self._head_read = 0
        self._refusal: str | None = None

    def data_received(self, data: bytes) -> None:
        head_at_start = self._reading_head
        super().data_received(data)
        # A read that began and ended inside a head is all head; one that began in a body is not
        # counted, so a pipelined request is never refused for its predecessor's body.
        if head_at_start and self._reading_head and self._refusal is None:
            self._head_read += len(data)
            if self._head_read > self.max_header_bytes + 4 * self.max_header_count + REQUEST_LINE_ALLOWANCE:
                self._refusal = f"Request headers take more than {self.max_header_bytes} bytes (max_header_bytes)"
                self.send_400_response(self._refusal)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        if len(self.headers) > self.max_header_count:
            self._refusal = f"More than {self.max_header_count} request headers (max_header_count)"
            raise _HeadTooLarge  # the parser stops, and uvicorn answers through send_400_response
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._reading_head = True
        self._head_read = 0
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        if self._refusal is None:
            super().send_400_response(msg)
            return
        body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": self._refusal}})
        head = (
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
        )
        self.transport.write(head + body)
        self.transport.close()


def head_bounded_protocol(limits: EndpointLimits) -> type[HeadBoundedHttpToolsProtocol]:
    """The protocol class to give uvicorn (`Config(http=...)`) for these limits."""
    return type(
        "HeadBoundedHttpTools",
        (HeadBoundedHttpToolsProtocol,),
        {"max_header_count": limits.max_header_count, "max_header_bytes": limits.max_header_bytes},
    )
