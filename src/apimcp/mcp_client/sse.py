"""Server-sent events of a response, as the JSON messages their `data` carries, within size bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import aiohttp
import orjson


class EventTooLarge(Exception):
    pass


async def messages(
    response: aiohttp.ClientResponse,
    max_event_bytes: int,
    *,
    max_total_bytes: int | None = None,
    transform: Callable[[bytes], bytes] | None = None,
) -> AsyncIterator[object]:
    """Each event's data parsed as JSON (events without data, or with data that is not JSON, are skipped).
    `max_total_bytes` bounds the whole stream; `transform` is applied to each data line before it is parsed
    (masking credentials an upstream echoes)."""
    data: list[bytes] = []
    size = total = 0
    while True:
        line = await response.content.readline()
        if not line:
            break
        total += len(line)
        if max_total_bytes is not None and total > max_total_bytes:
            raise EventTooLarge(f"the stream passed {max_total_bytes} bytes")
        line = line.rstrip(b"\r\n")
        if not line:
            parsed = parsed_event(data)
            if parsed is not None:
                yield parsed
            data, size = [], 0
            continue
        if line.startswith(b"data:"):
            chunk = line[5:].removeprefix(b" ")
            size += len(chunk)
            if size > max_event_bytes:
                raise EventTooLarge(f"an event passed {max_event_bytes} bytes")
            data.append(transform(chunk) if transform is not None else chunk)


def parsed_event(data: list[bytes]) -> object | None:
    """An event's data lines as JSON; None for no data, or data that is not JSON (skipped, as a client does)."""
    if not data:
        return None
    try:
        parsed: object = orjson.loads(b"\n".join(data))
    except orjson.JSONDecodeError:
        return None
    return parsed
