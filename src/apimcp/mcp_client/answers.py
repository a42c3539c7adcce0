"""The answer to one request, read from what a server sent back: a JSON body, or the messages of an SSE stream.

A server's error is an `UpstreamError` with its JSON-RPC code; an answer that holds no response to the request
(a stream cut before it, HTML from a proxy) is one too, without a code. Messages are bounded by whoever reads
the body (its size) and, in a stream, by event (`sse.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from apimcp.mcp_client.sse import parsed_event


class UpstreamError(Exception):
    """An MCP server refused or failed a request; `code` is its JSON-RPC error code, when it sent one."""

    def __init__(self, message: str, code: int | None = None, data: Any = None) -> None:
        message = _said(message)
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


MAX_MESSAGE_CHARS = 2000
"""Of a server's error message, as of an error body any backend answers (`http_common.ERROR_BODY_CHARS`)."""
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _said(message: str) -> str:
    """A server's words as a client may be shown them: cut, and without control characters (a terminal's escapes)."""
    cut = message[:MAX_MESSAGE_CHARS] + ("…" if len(message) > MAX_MESSAGE_CHARS else "")
    return _CONTROLS.sub("\N{REPLACEMENT CHARACTER}", cut)


def response_to(message: object, request_id: int) -> Mapping[str, Any] | None:
    """`message`'s result when it is the response to `request_id`; None when it is another message (a
    notification, a request of the server's); an `UpstreamError` when it is that request's error."""
    if not isinstance(message, Mapping) or "method" in message:
        return None
    answered = message.get("id")
    if type(answered) is not int or answered != request_id:  # 100.0 and true are no answer to request 100 or 1
        return None
    error = message.get("error")
    if isinstance(error, Mapping):
        code = error.get("code")
        text = error.get("message")
        raise UpstreamError(
            text if isinstance(text, str) and text else "the server answered an error without a message",
            code if type(code) is int else None,
            error.get("data"),
        )
    result = message.get("result")
    if not isinstance(result, Mapping):
        raise UpstreamError("the server's response has no result object")
    return result


def messages_of(body: bytes, content_type: str) -> Iterator[object]:
    """The JSON-RPC messages of a whole response body: one JSON value (an object, or a batch's array), or the
    `data` of each server-sent event."""
    if content_type.split(";", 1)[0].strip().lower() == "text/event-stream":
        yield from _events(body.splitlines())
        return
    try:
        value: object = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UpstreamError(f"the server's answer is not JSON ({content_type or 'no content type'})") from None
    if isinstance(value, list):
        yield from value
    else:
        yield value


def result_of(body: bytes, content_type: str, request_id: int) -> Mapping[str, Any]:
    """The result of `request_id` in a whole response body."""
    for message in messages_of(body, content_type):
        result = response_to(message, request_id)
        if result is not None:
            return result
    raise UpstreamError("the server's answer holds no response to the request")


def _events(lines: Iterable[bytes]) -> Iterator[object]:
    data: list[bytes] = []
    for line in (*lines, b""):
        if not line:
            parsed = parsed_event(data)
            if parsed is not None:
                yield parsed
            data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
