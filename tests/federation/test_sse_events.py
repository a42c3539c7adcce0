"""Reading an upstream's SSE events within their bounds (`mcp_client.sse`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from apimcp.mcp_client.sse import EventTooLarge, events


class _Stream:
    """What `events` reads of an aiohttp response: its lines, one at a time."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self.content = self
        self._lines = lines

    async def readline(self, max_line_length: int) -> bytes:
        return next(self._lines, b"")


async def _read(lines: Iterator[bytes], most: int) -> list[tuple[str, list[bytes]]]:
    return [event async for event in events(_Stream(lines), most)]  # type: ignore[arg-type]


def test_empty_data_lines_count_against_the_event_s_bound() -> None:
    """The finding: a `data:` line with nothing after it added nothing to the event's size but an entry to its
    data: an upstream sending 120 MB of them grew the gateway's memory by 155 MB past the 1 MiB bound."""

    def flood() -> Iterator[bytes]:
        yield b"event: message\n"
        yield from [b"data:\n"] * 100_000  # bounded, so that a regression fails rather than fills the memory
        yield b"\n"

    with pytest.raises(EventTooLarge, match="passed 1024 bytes"):
        anyio.run(_read, flood(), 1024)


def test_an_event_of_its_bound_exactly_is_read() -> None:
    data = b"x" * 1000
    lines: list[Any] = [b"data: " + data + b"\n", b"data:\n", b"\n"]  # its data: 1,001 bytes once joined
    assert anyio.run(_read, iter(lines), 1001) == [("message", [data, b""])]
    with pytest.raises(EventTooLarge):
        anyio.run(_read, iter(lines), 1000)
