"""How each way a script can end becomes the custom tool's result."""

from __future__ import annotations

from typing import Any

import orjson

from apimcp.protocol.models import NO_VALUE, CallToolResult, RawJson, TextContent
from apimcp.shaping.limits import DEFAULT_LARGE_FROM_BYTES

MESSAGE_CHARS = 2000


def well_formed(text: str) -> str:
    """`text` with lone UTF-16 surrogates (JavaScript strings may hold them) replaced by U+FFFD."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def error(text: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=text),), is_error=True)


def returned(
    subject: str, text: str, max_bytes: int, large_from_bytes: int = DEFAULT_LARGE_FROM_BYTES
) -> CallToolResult:
    """The script's `return`: compact JSON text, and the value as structured content if an object.

    The text is `JSON.stringify`'s, well-formed JSON: only the lone surrogates it escapes (`\\udXXX`) make
    orjson refuse it. A large one without such an escape is therefore passed on as it is (`RawJson`), never
    parsed: in the script's worker thread a parse holds the interpreter as long as on the event loop.
    """
    try:
        data: bytes | None = text.encode()
    except UnicodeEncodeError:
        data = None
    if len(data if data is not None else text.encode("utf-8", "surrogatepass")) > max_bytes:
        return too_large(subject, max_bytes)
    if data is not None and len(data) >= large_from_bytes and "\\ud" not in text and "\\uD" not in text:
        raw = RawJson(data=data)
        return CallToolResult(content=(TextContent(text=text),), structured_content=raw if raw.is_object else NO_VALUE)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        # JSON.stringify escapes lone surrogates as \\udXXX, which orjson refuses to decode.
        return error(f"{subject} returned a string that is not valid Unicode (a lone surrogate)")
    return CallToolResult(
        content=(TextContent(text=text),),
        structured_content=value if isinstance(value, dict) else NO_VALUE,
    )


def too_large(subject: str, max_bytes: int) -> CallToolResult:
    return error(f"{subject} returned more JSON than its limit of {max_bytes} bytes")


def threw(message: str) -> CallToolResult:
    """An uncaught exception: its message, without the "Error: " that String(new Error(m)) adds."""
    message = well_formed(message).removeprefix("Error: ")
    return error(message[:MESSAGE_CHARS] or "the script threw an exception without a message")


def failed(message: str, data: Any) -> CallToolResult:
    """`rs.fail(message, data)`: the error text is JSON {"message", "data"}."""
    return error(orjson.dumps({"message": well_formed(message)[:MESSAGE_CHARS], "data": data}).decode())
