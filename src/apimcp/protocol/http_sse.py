"""The 2024-11-05 HTTP+SSE transport, for clients that predate Streamable HTTP.

A client opens `GET .../sse`; the first event (`endpoint`) names where it POSTs its messages
(`.../messages?sessionId=...`); every POST is accepted with 202 and whatever answers it travels on the SSE
stream as `message` events. Each message is handed to the endpoint's Streamable HTTP side in process, as a
client of that transport would send it (with the session's `Mcp-Session-Id` and version once initialize has
answered), so both transports share one engine: same sessions, same limits, same handlers. After
initialize the session's GET stream is followed for what the server sends unasked; when the SSE stream
closes the session is deleted.

The connection lives in one process (the stream and the POSTs must reach the same replica: behind several
gateways this transport needs sticky routing). Bounded: at most `max_listeners` streams per endpoint, 64
messages in flight and 1,000 waiting to be written per stream (a client that does not read is dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import orjson

from apimcp.protocol.caller import CALLER_KEY
from apimcp.protocol.deadlines import SharedDeadline
from apimcp.protocol.exchange import (
    AsgiMessage,
    BodyTooLarge,
    BodyTooSlow,
    Receive,
    Scope,
    Send,
    read_body,
    wait_for_disconnect,
)

AsgiCall = Callable[[Scope, Receive, Send], Awaitable[None]]
MAX_IN_FLIGHT = 64
MAX_WAITING = 1000
KEEPALIVE_SECONDS = 15.0
_SESSION_HEADERS = {b"mcp-session-id", b"mcp-protocol-version", b"content-type", b"accept", b"content-length",
                    b"last-event-id"}  # fmt: skip


def _principal(scope: Scope) -> str | None:
    caller = scope.get(CALLER_KEY)
    return getattr(caller, "principal", None)


class _Connection:
    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.principal = _principal(scope)
        self.outbox: asyncio.Queue[bytes | None] = asyncio.Queue(MAX_WAITING)
        self.session_id: str | None = None
        self.version: str | None = None
        self.slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.tasks: set[asyncio.Task[None]] = set()

    def put(self, data: bytes) -> None:
        try:
            self.outbox.put_nowait(data)
        except asyncio.QueueFull:  # the client is not reading: end its stream
            with contextlib.suppress(asyncio.QueueEmpty):
                self.outbox.get_nowait()
            self.outbox.put_nowait(None)

    def headers(self, extra: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        kept = [(k, v) for k, v in self.scope["headers"] if k not in _SESSION_HEADERS]
        if self.session_id is not None:
            kept.append((b"mcp-session-id", self.session_id.encode("latin-1")))
        if self.version is not None:
            kept.append((b"mcp-protocol-version", self.version.encode("latin-1")))
        return kept + extra


class HttpSseTransport:
    """The HTTP+SSE side of one endpoint: `app` is its Streamable HTTP handler."""

    def __init__(
        self, app: AsgiCall, max_streams: int = 1000, max_body_bytes: int = 4 * 1024 * 1024,
        body_read_seconds: float = 10.0,
    ) -> None:  # fmt: skip
        self._app = app
        self._connections: dict[str, _Connection] = {}
        self._max_streams = max_streams
        self._max_body_bytes = max_body_bytes
        self._body_deadline = SharedDeadline(body_read_seconds)

    async def stream(self, scope: Scope, receive: Receive, send: Send, messages_path: str) -> None:
        """`GET .../sse`: the client's stream, until it goes away."""
        if len(self._connections) >= self._max_streams:
            await _json(send, 503, {"error": "Too many open streams; try again later"}, [(b"retry-after", b"5")])
            return
        key = secrets.token_urlsafe(18)
        connection = self._connections[key] = _Connection(scope)
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no"),
        ]})  # fmt: skip
        gone = asyncio.ensure_future(wait_for_disconnect(receive))
        try:
            endpoint = f"{messages_path}?sessionId={key}".encode()
            await send({"type": "http.response.body", "body": b"event: endpoint\ndata: " + endpoint + b"\n\n",
                        "more_body": True})  # fmt: skip
            while not gone.done():
                waiter = asyncio.ensure_future(connection.outbox.get())
                await asyncio.wait({waiter, gone}, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    waiter.cancel()
                    if not gone.done():
                        await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
                    continue
                data = waiter.result()
                if data is None:
                    break
                await send({"type": "http.response.body", "body": b"event: message\ndata: " + data + b"\n\n",
                            "more_body": True})  # fmt: skip
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b""})
        finally:
            gone.cancel()
            self._connections.pop(key, None)
            for task in connection.tasks:
                task.cancel()
            await self._end_session(connection)

    async def post(self, scope: Scope, receive: Receive, send: Send, key: str | None) -> None:
        """`POST .../messages?sessionId=...`: accepted at once, answered on the stream."""
        connection = self._connections.get(key or "")
        if connection is None or connection.principal != _principal(scope):
            await _json(send, 404, {"error": "Unknown sessionId: open the SSE stream (GET .../sse) first"})
            return
        try:
            body = await read_body(receive, self._max_body_bytes, self._body_deadline)
        except BodyTooLarge:
            await _json(send, 413, {"error": f"The message is larger than {self._max_body_bytes} bytes"})
            return
        except BodyTooSlow:
            await _json(send, 408, {"error": "The message did not arrive in time"})
            return
        if _is_request(body):  # answers and notifications never wait: the requests they unblock hold slots
            await connection.slots.acquire()
        else:
            task = asyncio.ensure_future(self._forward(connection, body))
            connection.tasks.add(task)
            task.add_done_callback(connection.tasks.discard)
            await _json(send, 202, None)
            return
        task = asyncio.ensure_future(self._forward(connection, body))
        connection.tasks.add(task)

        def finished(done: asyncio.Task[None]) -> None:
            connection.tasks.discard(done)
            connection.slots.release()

        task.add_done_callback(finished)
        await _json(send, 202, None)

    async def _forward(self, connection: _Connection, body: bytes) -> None:
        message: Any = None
        with contextlib.suppress(orjson.JSONDecodeError):
            message = orjson.loads(body)
        status, headers, answers = await self._call(connection, "POST", body, [
            (b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream"),
        ], connection.put)  # fmt: skip
        if isinstance(message, dict) and message.get("method") == "initialize" and status == 200:
            session = headers.get(b"mcp-session-id")
            result = answers[0].get("result") if answers and isinstance(answers[0], dict) else None
            if session is not None and isinstance(result, dict):
                connection.session_id = session.decode("latin-1")
                version = result.get("protocolVersion")
                connection.version = version if isinstance(version, str) else None
                follow = asyncio.ensure_future(self._follow(connection))
                connection.tasks.add(follow)

    async def _follow(self, connection: _Connection) -> None:
        """The session's GET stream, for what the server sends unasked."""
        await self._call(connection, "GET", b"", [(b"accept", b"text/event-stream")], connection.put)

    async def _end_session(self, connection: _Connection) -> None:
        if connection.session_id is not None:
            with contextlib.suppress(Exception):
                await self._call(connection, "DELETE", b"", [(b"accept", b"application/json")], lambda _: None)

    async def _call(
        self, connection: _Connection, method: str, body: bytes, extra: list[tuple[bytes, bytes]],
        deliver: Callable[[bytes], None],
    ) -> tuple[int, dict[bytes, bytes], list[Any]]:  # fmt: skip
        """Run one Streamable HTTP request in process; every JSON-RPC message it answers goes to `deliver`."""
        base = connection.scope["path"].rsplit("/", 1)[0]  # the endpoint's own path, without /sse
        scope = {**connection.scope, "method": method, "path": base, "headers": connection.headers(extra),
                 "query_string": b""}  # fmt: skip
        sent = False
        status = 0
        headers: dict[bytes, bytes] = {}
        answers: list[Any] = []
        buffer = b""
        streaming = False

        async def receive() -> AsgiMessage:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # never: the in-process client stays until the request ends
            raise AssertionError("unreachable")

        def emit(data: bytes) -> None:
            if not answers:  # only the first is read (initialize's); a GET stream's would pile up
                with contextlib.suppress(orjson.JSONDecodeError):
                    answers.append(orjson.loads(data))
            deliver(data)

        async def reply(message: AsgiMessage) -> None:
            nonlocal status, headers, buffer, streaming
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = dict(message.get("headers", ()))
                streaming = headers.get(b"content-type", b"").startswith(b"text/event-stream")
                return
            buffer += message.get("body", b"")
            if streaming:
                *events, buffer = buffer.split(b"\n\n")
                for event in events:
                    data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
                    if data:
                        emit(data)
            elif not message.get("more_body") and buffer.strip() and status != 202:
                emit(buffer)

        await self._app(scope, receive, reply)
        return status, headers, answers


def _is_request(body: bytes) -> bool:
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return True  # answered with a parse error: counts like a request
    return not isinstance(message, dict) or ("method" in message and "id" in message)


async def _json(send: Send, status: int, value: object, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = orjson.dumps(value) if value is not None else b""
    start = [(b"content-type", b"application/json")] if value is not None else []
    await send({"type": "http.response.start", "status": status, "headers": start + (headers or [])})
    await send({"type": "http.response.body", "body": body})


def names_http_sse(scope: Scope) -> bool:
    """Whether a request is one of the HTTP+SSE transport's: `GET .../sse` or `POST .../messages`."""
    path: str = scope.get("path", "")
    method = scope.get("method")
    return (method == "GET" and path.endswith("/sse")) or (method == "POST" and path.endswith("/messages"))


async def serve_http_sse(transport: HttpSseTransport, scope: Scope, receive: Receive, send: Send) -> bool:
    """Serve `GET .../sse` and `POST .../messages?sessionId=` (whatever comes before); False for anything else."""
    path: str = scope.get("path", "")
    method = scope.get("method")
    if method == "GET" and path.endswith("/sse"):
        await transport.stream(scope, receive, send, path.removesuffix("/sse") + "/messages")
        return True
    if method == "POST" and path.endswith("/messages"):
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        await transport.post(scope, receive, send, (query.get("sessionId") or [None])[0])
        return True
    return False
