"""One HTTP response in the making, over raw ASGI.

A request's answer starts as a plain `application/json` body and turns into an
SSE stream only when something has to be sent before the result (progress, a
log message, a server-to-client request). Deciding late keeps the common case
(one JSON object) as cheap as an echo, and lets error statuses such as 400 and
404 apply whenever nothing has been streamed yet.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

import orjson

from apimcp.protocol.deadlines import SharedDeadline
from apimcp.protocol.errors import INTERNAL_ERROR, INVALID_REQUEST
from apimcp.protocol.event_store import RETRY_MILLISECONDS, StreamRecorder
from apimcp.protocol.json_writing import unwritable_reason
from apimcp.protocol.jsonrpc import error_message, result_message

log = logging.getLogger("apimcp.protocol")

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
Header = tuple[bytes, bytes]

_JSON = (b"content-type", b"application/json")
_SSE_HEADERS: tuple[Header, ...] = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
)
KEEPALIVE = b":\n\n"
_RETRY = b"retry: " + str(RETRY_MILLISECONDS).encode() + b"\n\n"


def encode(message: object) -> bytes:
    """A message as JSON; one that cannot be encoded (nested too deep) is answered as `_unencodable` says."""
    try:
        return orjson.dumps(message)
    except orjson.JSONEncodeError as exc:
        return _unencodable(message, exc)


def _unencodable(message: object, exc: Exception) -> bytes:
    """A tool's result that cannot be written is that tool's failure, told as a tool error the model can read;
    any other result an internal error that says why. Either way the request gets its answer, with its id."""
    raw_id = message.get("id") if isinstance(message, dict) else None
    request_id = raw_id if isinstance(raw_id, str | int) else None
    reason = unwritable_reason(exc)
    log.warning("a response could not be encoded as JSON (%s); the client is told so", reason)
    result = message.get("result") if isinstance(message, dict) else None
    if request_id is not None and isinstance(result, dict) and isinstance(result.get("content"), list):
        text = f"The tool's result cannot be sent: {reason}."
        return orjson.dumps(result_message(request_id, {"content": [{"type": "text", "text": text}], "isError": True}))
    text = f"Internal error: the result could not be encoded as JSON ({reason})"
    return orjson.dumps(error_message(request_id, INTERNAL_ERROR, text))


def sse_frame(message: object) -> bytes:
    try:
        data = orjson.dumps(message)
    except orjson.JSONEncodeError as exc:
        data = _unencodable(message, exc)
    return b"event: message\ndata: " + data + b"\n\n"


@functools.lru_cache(maxsize=256)
def parse_accept(value: bytes | None) -> tuple[bool, bool]:
    """Whether an Accept header admits (application/json, text/event-stream); absent admits both."""
    if value is None:
        return True, True
    json_ok = sse_ok = False
    for part in value.split(b","):
        media = part.split(b";", 1)[0].strip().lower()
        if media in (b"*/*", b""):
            return True, True
        if media in (b"application/json", b"application/*"):
            json_ok = True
        elif media in (b"text/event-stream", b"text/*"):
            sse_ok = True
    return json_ok, sse_ok


class Exchange:
    """Writes the response to one HTTP request: a JSON body, an empty status, or an SSE stream."""

    __slots__ = ("_send", "accepts_json", "accepts_sse", "finished", "gone", "headers", "recorder", "streaming")

    def __init__(self, send: Send, *, accepts_json: bool, accepts_sse: bool) -> None:
        self._send = send
        self.accepts_json = accepts_json
        self.accepts_sse = accepts_sse
        self.headers: list[Header] = []
        """Extra headers for whatever response is sent (session id, canonical endpoint...)."""
        self.streaming = False
        self.finished = False
        self.recorder: StreamRecorder | None = None
        """Set on a resumable stream: its events get ids and are kept for a client that comes back."""
        self.gone = False
        """The client of a resumable stream went away: events are only kept from then on."""

    async def json(self, status: int, message: object, headers: Iterable[Header] = ()) -> None:
        """Answer with one JSON document, or as the last event when already streaming.

        A 200 answer to a client that accepts only SSE is a one-event stream; error statuses
        always travel as plain JSON so the status code keeps its meaning.
        """
        if self.streaming:
            await self.event(message, last=True)
            await self.close()
            return
        if status == 200 and not self.accepts_json and self.accepts_sse:
            await self.open_stream()
            await self.event(message)
            await self.close()
            return
        try:
            body = orjson.dumps(message)
        except orjson.JSONEncodeError as exc:
            body = _unencodable(message, exc)
        self.finished = True
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [_JSON, (b"content-length", str(len(body)).encode()), *self.headers, *headers],
            }
        )
        await self._send({"type": "http.response.body", "body": body})

    async def refuse(
        self, status: int, text: str, headers: Iterable[Header] = (), *, code: int = INVALID_REQUEST, data: Any = None
    ) -> None:
        """Answer a request refused before its body was read (or understood): a JSON-RPC error, id null."""
        await self.json(status, error_message(None, code, text, data), headers)

    async def empty(self, status: int, headers: Iterable[Header] = ()) -> None:
        self.finished = True
        await self._send({"type": "http.response.start", "status": status, "headers": [*self.headers, *headers]})
        await self._send({"type": "http.response.body", "body": b""})

    async def open_stream(self) -> None:
        if self.streaming:
            return
        self.streaming = True
        await self._send({"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *self.headers]})
        if self.recorder is not None:  # how soon to come back if the stream drops
            await self._send({"type": "http.response.body", "body": _RETRY, "more_body": True})

    async def event(self, message: object, *, last: bool = False) -> None:
        """Send one SSE event, switching the response to a stream if it is not one yet (`last`: the stream's
        final event, a POST's response)."""
        if not self.streaming:
            await self.open_stream()
        if self.recorder is None:
            await self._send({"type": "http.response.body", "body": sse_frame(message), "more_body": True})
            return
        data = encode(message)
        await self.replay(await self.recorder.record(data, last=last), data)

    async def replay(self, event_id: bytes | None, data: bytes) -> None:
        """Send an event (its JSON) with its id (none when it could not be kept)."""
        frame = b"event: message\ndata: " + data + b"\n\n"
        await self._send_while_there(b"id: " + event_id + b"\n" + frame if event_id is not None else frame)

    async def _send_while_there(self, frame: bytes) -> None:
        if self.gone:
            return
        try:
            await self._send({"type": "http.response.body", "body": frame, "more_body": True})
        except OSError:  # the client went away; it can resume from what was kept
            self.gone = True

    async def keepalive(self) -> None:
        if self.streaming and not self.finished:
            await self._send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})

    async def close(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.streaming and not self.gone:
            await self._send({"type": "http.response.body", "body": b""})


class BodyTooLarge(Exception):
    """The request body is larger than the endpoint accepts."""


class BodyTooSlow(Exception):
    """The request body did not arrive within the endpoint's total read time."""


async def read_body(receive: Receive, limit: int, deadline: SharedDeadline) -> bytes:
    """The whole request body; raises BodyTooLarge past `limit` bytes, BodyTooSlow past `deadline`.

    Nearly every body is complete at the first read, which costs no deadline: watching a task costs
    more than the rest of reading a small body. A body that comes in pieces gets one total deadline
    from its first piece on. How long the first piece may take is the server's to bound: apimcp's
    server closes a connection whose body stops arriving (`apimcp.servers.head_limits`).
    """
    message = await receive()
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise BodyTooLarge
        return body
    watch = deadline.watch()
    try:
        chunks = [body]
        size = len(body)
        while message.get("more_body", False):
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        return b"".join(chunks)
    except asyncio.CancelledError:
        if not watch.timed_out():
            raise
        raise BodyTooSlow from None
    finally:
        watch.done()


async def wait_for_disconnect(receive: Receive) -> None:
    """Return once the client has gone away (call only after the body was read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def run_lifespan(receive: Receive, send: Send, on_shutdown: Callable[[], None]) -> None:
    """Answer an ASGI lifespan scope: nothing to start, `on_shutdown` to end long-lived streams."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            on_shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return
