"""An ASGI layer in front of the REST API that refuses oversized or slow requests before any work is done.

Header count and size are checked first (431), then the body's declared length
against the limit of its route (413), all before routing, authentication or a
database session. While the application reads the body, the bytes received are
counted against the same limit (a body without Content-Length, or one longer than
it claims) and the whole body must arrive before a deadline (408). A refused
request gets a problem detail and its connection is closed, so the rest of an
oversized body is never read. An answer the application gives without reading a
small body (a 401 before an upload is read) reads and drops the rest first:
closing on unread bytes makes the kernel reset the connection, and the client may
lose the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apimcp.control.limits import ApiLimits

IsUpload = Callable[[str, str], bool]
"""Whether a request (method, path) is a description or artifact upload."""

PROBLEM = b"application/problem+json"
MAX_DRAINED_BYTES = 64 * 1024
"""What is left of a body the application did not read is read and dropped up to this size; beyond, the
connection is closed."""
MAX_DROPPED_REFUSED_BYTES = 4 * 1024 * 1024
"""A body whose declared size is over its limit, but not by much, is read and dropped before the 413: a server
that closes on unread data resets the connection, and a client still sending then loses the answer. Larger
ones are answered at once and cost nothing."""


class _Refused(Exception):
    """Raised from `receive` when the body breaks a limit; the layer answers instead of the application."""


class _BodyGuard:
    """Counts one request's body against its limit and deadline."""

    __slots__ = ("deadline", "done", "limit", "received", "refusal", "response_started")

    def __init__(self, limit: int, deadline: float) -> None:
        self.limit = limit
        self.deadline = deadline
        self.received = 0
        self.done = False
        self.refusal: tuple[int, str, str] | None = None
        self.response_started = False


class RequestLimits:
    def __init__(self, app: ASGIApp, limits: ApiLimits, is_upload: IsUpload) -> None:
        self.app = app
        self.limits = limits
        self.is_upload = is_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        too_many = _header_problem(headers, limits)
        if too_many is not None:
            await _problem(send, 431, "Request Header Fields Too Large", too_many)
            return
        content_type, declared, chunked = b"", None, False
        for name, value in headers:
            if name == b"content-type":
                content_type = value
            elif name == b"transfer-encoding":
                chunked = True
            elif name == b"content-length":
                if not value.isdigit():
                    await _problem(send, 400, "Bad Request", "Content-Length is not a number", field="Content-Length")
                    return
                declared = int(value)
        upload = content_type.lower().startswith(b"multipart/form-data") and self.is_upload(
            scope["method"], scope["path"]
        )
        limit = limits.max_upload_bytes if upload else limits.max_json_bytes
        deadline = asyncio.get_running_loop().time() + limits.body_seconds
        if declared is not None and declared > limit:
            if declared <= MAX_DROPPED_REFUSED_BYTES:
                await _dropped(receive, deadline)
            await _problem(send, 413, "Content Too Large", _too_large(declared, limit, upload))
            return
        guard = _BodyGuard(limit, deadline)
        has_body = chunked or bool(declared)

        async def guarded_receive() -> Message:
            if guard.done:  # the body is complete: later receives wait for a disconnect, without a deadline
                return await receive()
            try:
                async with asyncio.timeout_at(guard.deadline):
                    message = await receive()
            except TimeoutError:
                seconds = f"{limits.body_seconds:g}"
                guard.refusal = (408, "Request Timeout", f"the request body did not arrive within {seconds} s")
                raise _Refused from None
            if message["type"] == "http.request":
                guard.received += len(message.get("body", b""))
                if guard.received > guard.limit:
                    guard.refusal = (413, "Content Too Large", _too_large(None, guard.limit, upload))
                    raise _Refused
                guard.done = not message.get("more_body", False)
            else:
                guard.done = True
            return message

        async def drained() -> bool:
            """Read and drop the rest of a small body, within its deadline; False when it is not that."""
            if chunked or declared is None or declared - guard.received > MAX_DRAINED_BYTES:
                return False
            try:
                async with asyncio.timeout_at(guard.deadline):
                    while not guard.done:
                        message = await receive()
                        if message["type"] != "http.request":
                            return False
                        guard.received += len(message.get("body", b""))
                        guard.done = not message.get("more_body", False) or guard.received > guard.limit
            except TimeoutError:
                return False
            return guard.received <= guard.limit

        async def guarded_send(message: Message) -> None:
            if guard.refusal is not None:
                return  # whatever the application made of the refusal, the layer answers it
            if message["type"] == "http.response.start":
                guard.response_started = True
                # answered without reading it all (e.g. 401): a large rest is not read, the connection ends
                if has_body and not guard.done and not await drained():
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, guarded_receive, guarded_send)
        except _Refused:
            pass
        except Exception:
            if guard.refusal is None:
                raise
        if guard.refusal is not None and not guard.response_started:
            await _problem(send, *guard.refusal)


async def _dropped(receive: Receive, deadline: float) -> None:
    """Read and drop a request's body until it ends, the client leaves or the deadline passes."""
    try:
        async with asyncio.timeout_at(deadline):
            while True:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    return
    except TimeoutError:
        return


def _header_problem(headers: list[tuple[bytes, bytes]], limits: ApiLimits) -> str | None:
    if len(headers) > limits.max_header_count:
        return f"the request has {len(headers)} header fields; at most {limits.max_header_count} are accepted"
    size = sum(len(name) + len(value) for name, value in headers)
    if size > limits.max_header_bytes:
        return f"the request's header fields take {size} bytes; at most {limits.max_header_bytes} are accepted"
    return None


def _too_large(declared: int | None, limit: int, upload: bool) -> str:
    what = "an upload" if upload else "this request's body"
    size = f"the body has {declared} bytes" if declared is not None else "the body grew past the limit"
    return f"{size}; {what} may have at most {limit} bytes"


async def _problem(send: Send, status: int, title: str, detail: str, field: str | None = None) -> None:
    """An RFC 9457 problem, and the connection closed (what is left of the request is not read)."""
    problem: dict[str, object] = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    if field is not None:
        problem["field"] = field
    body = orjson.dumps(problem)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
