"""Server-sent events of a response, as the JSON messages their `data` carries, within size bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson
from aiohttp.http_exceptions import LineTooLong


class EventTooLarge(Exception):
    pass


async def events(
    response: aiohttp.ClientResponse,
    max_event_bytes: int,
    *,
    max_total_bytes: int | None = None,
    transform: Callable[[bytes], bytes] | None = None,
) -> AsyncIterator[tuple[str, list[bytes]]]:
    """Each event as its name (`message` when it has none) and its data lines, within size bounds.
    `max_total_bytes` bounds the whole stream; `transform` is applied to each data line (masking credentials
    an upstream echoes)."""
    data: list[bytes] = []
    name = "message"
    size = total = 0
    longest = max_event_bytes + 64  # a whole event's data on one line (as SDKs write it), with `data: ` and its end
    while True:
        try:  # aiohttp's own bound on a line is 512 KiB, which raised what nobody expected
            line = await response.content.readline(max_line_length=longest)
        except LineTooLong:
            raise EventTooLarge(f"an event passed {max_event_bytes} bytes") from None
        if not line:
            break
        total += len(line)
        if max_total_bytes is not None and total > max_total_bytes:
            raise EventTooLarge(f"the stream passed {max_total_bytes} bytes")
        line = line.rstrip(b"\r\n")
        if not line:
            if data:
                yield name, data
            data, name, size = [], "message", 0
            continue
        if line.startswith(b"event:"):
            name = line[6:].strip().decode("utf-8", "replace")[:64]
        elif line.startswith(b"data:"):
            chunk = line[5:].removeprefix(b" ")
            size += len(chunk) + 1  # and the line break joining it: empty lines each cost an entry, and a byte
            if size > max_event_bytes + 1:
                raise EventTooLarge(f"an event passed {max_event_bytes} bytes")
            data.append(transform(chunk) if transform is not None else chunk)


async def messages(
    response: aiohttp.ClientResponse,
    max_event_bytes: int,
    *,
    max_total_bytes: int | None = None,
    transform: Callable[[bytes], bytes] | None = None,
) -> AsyncIterator[object]:
    """Each event's data parsed as JSON (events with data that is not JSON are skipped)."""
    async for _, data in events(response, max_event_bytes, max_total_bytes=max_total_bytes, transform=transform):
        parsed = parsed_event(data)
        if parsed is not None:
            yield parsed


def parsed_event(data: list[bytes]) -> object | None:
    """An event's data lines as JSON; None for no data, or data that is not JSON (skipped, as a client does)."""
    if not data:
        return None
    try:
        parsed: object = orjson.loads(b"\n".join(data))
    except orjson.JSONDecodeError:
        return None
    return parsed
