"""What the gateway's MCP client takes from an upstream: SSE events within their bounds (`mcp_client.sse`), a
session id it can send back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from apimcp.federation.era import opened_era
from apimcp.mcp_client.answers import UpstreamError
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


def test_a_session_id_a_header_cannot_carry_back_is_refused_when_the_session_opens() -> None:
    """A session id with a line break made every later request fail in aiohttp, not as the server's error."""
    result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    assert opened_era(result, {"Mcp-Session-Id": "abc-123"}).negotiated.session_id == "abc-123"
    with pytest.raises(UpstreamError, match="not visible ASCII"):
        opened_era(result, {"Mcp-Session-Id": "abc\r\nX-Evil: 1"})
