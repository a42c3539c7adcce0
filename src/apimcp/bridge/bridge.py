"""Carrying messages between a stdio MCP client and a Streamable HTTP endpoint, in either era.

Each line the client writes is one JSON-RPC message, POSTed on its own (several run at once, so that the
client can answer a server's request while the request that caused it is still streaming). What comes back
(a JSON body, or every message of an SSE stream) is written to stdout, one line each. When a session-era
initialize is answered with a session id, the bridge opens the session's GET stream for what the server
sends unasked, and deletes the session when the client closes stdin. A failure the endpoint does not
answer with JSON-RPC (unreachable, 401 without a JSON-RPC body, a stream that breaks) is answered to the
client as a JSON-RPC error for its request, naming the HTTP status; nothing else leaves the bridge.
Redirects are followed within the endpoint's origin only (`redirects.py`): the user's headers go nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from apimcp.bridge.redirects import RedirectRefused, exchange
from apimcp.mcp_client.headers import ACCEPT, Negotiated, headers_for, usable_session_id
from apimcp.mcp_client.sse import EventTooLarge, messages
from apimcp.protocol.versions import find_revision

log = logging.getLogger("apimcp.bridge")

MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_IN_FLIGHT = 64
"""Requests the client may have in progress at once; one more is answered an error at once."""
MAX_OTHERS_IN_FLIGHT = 16
"""Notifications and answers to the server's requests on their way at once, apart: a cancellation gets through
whatever requests are in progress."""
LISTEN_RESTARTS = 10
"""Times in a row the session's GET stream is opened again after it ended having carried nothing."""
BRIDGE_ERROR = -32603
_READ_CHUNK = 64 * 1024

Write = Callable[[bytes], Awaitable[None]]


class StdioBridge:
    def __init__(
        self, url: str, headers: Mapping[str, str], write: Write, *, max_event_bytes: int = MAX_LINE_BYTES
    ) -> None:
        self._url = url
        self._extra = dict(headers)
        self._write = write
        self._max_event_bytes = max_event_bytes
        self._negotiated = Negotiated()
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._other_slots = asyncio.Semaphore(MAX_OTHERS_IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()
        self._listening: asyncio.Task[None] | None = None
        self._http: aiohttp.ClientSession | None = None

    async def run(self, lines: asyncio.StreamReader) -> None:
        """Bridge until the client closes stdin, then end the session."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10)
        async with aiohttp.ClientSession(timeout=timeout) as self._http:
            try:
                while True:
                    try:
                        line = await lines.readline()
                    except ValueError:  # longer than the reader's limit: skip to the next line
                        await self._send_error(None, f"a message passed {MAX_LINE_BYTES} bytes")
                        continue
                    if not line:
                        break
                    if line.strip():
                        await self._schedule(line)
                if self._tasks:
                    await asyncio.wait(set(self._tasks), timeout=30)
            finally:
                if self._listening is not None:
                    self._listening.cancel()
                await self._end_session()

    async def _schedule(self, line: bytes) -> None:
        """Forward `line` in a task of its own, within the bounds on what is in progress."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            await self._write(
                orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            )
            return
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        if is_request and self._slots.locked():
            await self._send_error(message["id"], f"the client has {MAX_IN_FLIGHT} requests in progress: try again")
            return
        slots = self._slots if is_request else self._other_slots
        await slots.acquire()
        task = asyncio.create_task(self._forward(message, line, is_request))
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(done, slots))

    def _done(self, task: asyncio.Task[None], slots: asyncio.Semaphore) -> None:
        self._tasks.discard(task)
        slots.release()

    async def _forward(self, message: Any, line: bytes, is_request: bool) -> None:
        request_id = message["id"] if is_request else None
        try:
            await self._post(message, line, request_id if is_request else None)
        except RedirectRefused as exc:
            log.error("%s", exc)
            if is_request:
                await self._send_error(request_id, str(exc))
        except (aiohttp.ClientError, OSError, EventTooLarge) as exc:
            if is_request:
                await self._send_error(request_id, f"{self._url} could not be reached: {exc}")
            else:
                log.warning("a message to %s was lost: %s", self._url, exc)
        except ValueError as exc:  # a header value aiohttp refuses to send (a line break in a session id...)
            if is_request:
                await self._send_error(request_id, f"the message cannot be sent to {self._url}: {exc}")
            else:
                log.warning("a message to %s was not sent: %s", self._url, exc)

    async def _post(self, message: Any, body: bytes, request_id: object) -> None:
        assert self._http is not None
        headers = headers_for(message if isinstance(message, dict) else {}, self._negotiated, self._extra)
        async with exchange(self._http, "POST", self._url, headers, body) as response:
            if response.status == 202:
                return
            kind = response.headers.get("Content-Type", "")
            answered = False
            if kind.startswith("text/event-stream"):
                async for event in messages(response, self._max_event_bytes):
                    await self._write(orjson.dumps(event))
                    if _answers(event, request_id):
                        answered = True
                        self._learn(message, response, event)
                        break  # the response ends its stream: one left open would hold its slot for ever
            elif kind.startswith("application/json"):
                payload = await self._whole(response)
                with contextlib.suppress(orjson.JSONDecodeError):
                    event = orjson.loads(payload)
                    if isinstance(event, dict | list) and _is_json_rpc(event):
                        await self._write(payload.strip())
                        answered = request_id is None or any(_answers(e, request_id) for e in _each(event))
                        self._learn(message, response, event)
            if request_id is not None and not answered:
                await self._send_error(request_id, f"{self._url} answered HTTP {response.status} without a response")

    async def _whole(self, response: aiohttp.ClientResponse) -> bytes:
        """A JSON answer's whole body, however many pieces it comes in, within the bound on an event."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_READ_CHUNK):
            size += len(chunk)
            if size > self._max_event_bytes:
                raise EventTooLarge(f"a response passed {self._max_event_bytes} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _learn(self, sent: Any, response: aiohttp.ClientResponse, answer: Any) -> None:
        """After a session-era initialize: the session and the version, and the session's GET stream."""
        if not (isinstance(sent, dict) and sent.get("method") == "initialize" and isinstance(answer, dict)):
            return
        result = answer.get("result")
        session_id = response.headers.get("Mcp-Session-Id")
        if not isinstance(result, dict):
            return
        version = result.get("protocolVersion")
        if not (isinstance(version, str) and find_revision(version) is not None) or not usable_session_id(session_id):
            log.warning("%s answered initialize with a protocol version or session id that is none", self._url)
            return  # not learned: what follows goes out without them, and is answered as the endpoint sees fit
        self._negotiated = Negotiated(session_id, version)
        if session_id is not None and self._listening is None:
            self._listening = asyncio.create_task(self._listen())

    async def _listen(self) -> None:
        """The session's GET stream: what the server sends unasked (notifications, its own requests)."""
        assert self._http is not None
        empty = 0  # streams in a row that ended having carried nothing
        while empty < LISTEN_RESTARTS:
            headers = headers_for({}, self._negotiated, {**self._extra, "Accept": "text/event-stream"})
            carried = False
            try:
                async with exchange(self._http, "GET", self._url, headers) as response:
                    if response.status != 200 or not response.headers.get("Content-Type", "").startswith(
                        "text/event-stream"
                    ):
                        return  # the server offers no GET stream (405), or the session is gone
                    async for event in messages(response, self._max_event_bytes):
                        carried = True
                        await self._write(orjson.dumps(event))
            except RedirectRefused as exc:
                log.error("%s", exc)
                return
            except (aiohttp.ClientError, OSError, EventTooLarge) as exc:
                log.info("the GET stream of %s ended: %s", self._url, exc)
            empty = 0 if carried else empty + 1
            await asyncio.sleep(min(2**empty, 30))  # the stream ended (a server restart): open it again, backing off
        log.warning("the GET stream of %s ended %d times in a row carrying nothing: not opened again", self._url, empty)

    async def _end_session(self) -> None:
        session_id = self._negotiated.session_id
        if session_id is None or self._http is None or self._http.closed:
            return
        headers = headers_for({}, self._negotiated, self._extra)
        headers.pop("Content-Type", None)
        headers["Accept"] = ACCEPT
        try:
            async with asyncio.timeout(5), exchange(self._http, "DELETE", self._url, headers):
                pass
        except RedirectRefused as exc:
            log.error("%s", exc)
        except (aiohttp.ClientError, OSError, TimeoutError):
            pass

    async def _send_error(self, request_id: object, text: str) -> None:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": BRIDGE_ERROR, "message": text}}
        await self._write(orjson.dumps(error))


def _is_json_rpc(payload: object) -> bool:
    if isinstance(payload, list):
        return all(isinstance(p, dict) and p.get("jsonrpc") == "2.0" for p in payload)
    return isinstance(payload, dict) and payload.get("jsonrpc") == "2.0"


def _answers(event: object, request_id: object) -> bool:
    """Whether `event` is the response to `request_id` (`true` is no `1`, though Python says they are equal)."""
    if not isinstance(event, dict) or ("result" not in event and "error" not in event):
        return False
    found = event.get("id")
    return type(found) is type(request_id) and found == request_id


def _each(payload: object) -> list[object]:
    return payload if isinstance(payload, list) else [payload]


async def run_stdio(url: str, headers: Mapping[str, str]) -> None:
    """Bridge this process's stdin and stdout to `url`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    lock = asyncio.Lock()
    out = sys.stdout.buffer

    async def write(data: bytes) -> None:
        async with lock:
            out.write(data + b"\n")
            out.flush()

    await StdioBridge(url, headers, write).run(reader)
