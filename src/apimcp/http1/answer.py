"""An answer as the call path reads it: status, reason, headers and the whole body, decoded within a bound."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from apimcp.http1.errors import AnswerTooLarge, BadAnswer


class RawHeaders(Mapping[str, str]):
    """An answer's headers as they came, read by name without case: the call path asks for one or two of them
    (Content-Type, Content-Encoding, Location), so none is decoded before it is asked for. A name sent twice
    gives its first value, as `multidict`'s `get` does."""

    __slots__ = ("_raw",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw

    def __getitem__(self, name: str) -> str:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        wanted = name.lower().encode("latin-1")
        for key, value in self._raw:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return default

    def __iter__(self) -> Iterator[str]:
        """Each name once, as first sent."""
        first: dict[bytes, str] = {}
        for key, _ in self._raw:
            first.setdefault(key.lower(), key.decode("latin-1"))
        return iter(first.values())

    def __len__(self) -> int:
        return len({key.lower() for key, _ in self._raw})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    headers: Mapping[str, str]
    """`RawHeaders` from this client, aiohttp's own from aiohttp (`backends.lane`)."""
    body: bytes
    """Decoded (no `Content-Encoding` left), at most the caller's bound."""


MAX_CODINGS = 4
"""Content codings one answer may stack (`gzip, gzip`): each is undone in turn, a few at most."""


def decoded(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """`body` without its content codings (gzip, deflate, undone last applied first), refusing to expand past
    `max_bytes` (a small body may inflate a thousandfold). A coding this client cannot undo (br, zstd...) is a
    BadAnswer, never passed on: the body would reach the client unread, past the masking of secrets."""
    if not encoding or not body:
        return body
    codings = [coding.strip().lower() for coding in encoding.split(",") if coding.strip()]
    if len(codings) > MAX_CODINGS:
        raise BadAnswer(f"the answer stacks more than {MAX_CODINGS} content codings")
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            body = _inflate(body, _GZIP, max_bytes)
        elif coding == "deflate":  # zlib-wrapped as RFC 9110 says, or raw as some servers send it
            try:
                body = _inflate(body, zlib.MAX_WBITS, max_bytes)
            except zlib.error:
                body = _inflate(body, -zlib.MAX_WBITS, max_bytes)
        elif coding != "identity":
            raise BadAnswer(f"the answer is in a content coding this gateway does not read ({coding[:40]})")
    return body


_GZIP = 16 + zlib.MAX_WBITS


def _inflate(body: bytes, wbits: int, max_bytes: int) -> bytes:
    """The whole of `body` inflated: every member of a gzip body (members may follow one another), and a stream
    that stops before its end is corrupt (zlib.error), not a shorter answer.

    The body is fed in pieces, so that what follows a member (zlib copies it out whole) is at most a piece, and
    the output is joined once: with the whole body at once, each member cost a copy of the rest, and a body of
    tiny members held the event loop for minutes. Members are bounded all the same (`MAX_GZIP_MEMBERS`)."""
    view, size, at, parts = memoryview(body), 0, 0, []
    for _ in range(MAX_GZIP_MEMBERS):
        inflater = zlib.decompressobj(wbits)
        while not inflater.eof and at < len(body):
            piece = view[at : at + _PIECE]
            at += len(piece)
            out = inflater.decompress(piece, max_bytes + 1 - size)  # what is left unread goes past the bound
            size += len(out)
            if size > max_bytes:
                raise AnswerTooLarge
            parts.append(out)
        if not inflater.eof:
            raise zlib.error("the compressed body ends before its end")
        at -= len(inflater.unused_data)
        if at >= len(body) or wbits != _GZIP:  # what follows a zlib or raw stream is not read, as before
            return b"".join(parts)
    raise BadAnswer(f"the gzip body has more than {MAX_GZIP_MEMBERS} members")


_PIECE = 16 * 1024
MAX_GZIP_MEMBERS = 1000
"""Members one gzip body may have (concatenated files; a body of tiny members is work for nothing)."""
