"""An answer as the call path reads it: status, reason, headers and the whole body, decoded within a bound."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from multidict import CIMultiDict, CIMultiDictProxy

from apimcp.http1.errors import AnswerTooLarge


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    headers: CIMultiDictProxy[str]
    body: bytes
    """Decoded (no `Content-Encoding` left), at most the caller's bound."""


def headers_of(raw: list[tuple[bytes, bytes]]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict((name.decode("latin-1"), value.decode("latin-1")) for name, value in raw))


def decoded(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """`body` without its content coding (gzip, deflate), refusing to expand past `max_bytes` (a small body may
    inflate a thousandfold). An encoding this client did not ask for is left as it came."""
    if not encoding or not body:
        return body
    coding = encoding.strip().lower()
    if coding in ("gzip", "x-gzip"):
        return _inflate(body, zlib.decompressobj(16 + zlib.MAX_WBITS), max_bytes)
    if coding == "deflate":  # zlib-wrapped as RFC 9110 says, or raw as some servers send it
        try:
            return _inflate(body, zlib.decompressobj(), max_bytes)
        except zlib.error:
            return _inflate(body, zlib.decompressobj(-zlib.MAX_WBITS), max_bytes)
    return body


def _inflate(body: bytes, inflater: zlib._Decompress, max_bytes: int) -> bytes:
    out = inflater.decompress(body, max_bytes + 1)
    if len(out) > max_bytes:
        raise AnswerTooLarge
    return out
