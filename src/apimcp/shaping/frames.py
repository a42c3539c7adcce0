"""One message between the gateway and a shaping process: a small JSON header, and byte blobs beside it.

The blobs (a 10 MiB answer, its compact form, a TOON text) travel as they are: neither side escapes them
into JSON nor parses them to read the header, and the gateway never unpickles anything a child sends. A
frame is two counts (blobs, header bytes), each blob's length, then the header and the blobs.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import IO, Any, Final

import orjson

MAX_BLOBS: Final = 8
MAX_HEADER_BYTES: Final = 1024 * 1024
_COUNTS = struct.Struct("!II")


class FrameError(Exception):
    """A frame that is cut short or breaks its bounds."""


Frame = tuple[dict[str, Any], list[bytes]]


def pieces(header: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> list[bytes]:
    """The frame's bytes, in pieces to write one after the other (the blobs are not copied)."""
    head = orjson.dumps(header)
    if len(blobs) > MAX_BLOBS or len(head) > MAX_HEADER_BYTES:
        raise FrameError(f"a frame holds at most {MAX_BLOBS} blobs and {MAX_HEADER_BYTES} bytes of header")
    lengths = struct.pack(f"!{len(blobs)}Q", *(len(blob) for blob in blobs))
    return [_COUNTS.pack(len(blobs), len(head)) + lengths + head, *blobs]


def write(stream: IO[bytes], header: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> None:
    for piece in pieces(header, blobs):
        stream.write(piece)
    stream.flush()


def read(stream: IO[bytes], max_bytes: int) -> Frame | None:
    """The next frame, or None when the stream ends before one starts; `max_bytes` bounds its blobs together."""
    counts = stream.read(_COUNTS.size)
    if not counts:
        return None
    count, head_size = _COUNTS.unpack(_exactly(stream, _COUNTS.size, counts))
    if count > MAX_BLOBS or head_size > MAX_HEADER_BYTES:
        raise FrameError(f"a frame of {count} blobs and {head_size} bytes of header")
    lengths = struct.unpack(f"!{count}Q", _exactly(stream, 8 * count))
    if sum(lengths) > max_bytes:
        raise FrameError(f"a frame of {sum(lengths)} bytes, more than the {max_bytes} expected")
    try:
        header = orjson.loads(_exactly(stream, head_size))
    except orjson.JSONDecodeError:
        raise FrameError("a frame whose header is not JSON") from None
    if not isinstance(header, dict):
        raise FrameError("a frame whose header is not an object")
    return header, [_exactly(stream, length) for length in lengths]


def _exactly(stream: IO[bytes], size: int, start: bytes = b"") -> bytes:
    data = start + stream.read(size - len(start)) if len(start) < size else start
    if len(data) != size:
        raise FrameError("the stream ended within a frame")
    return data
