"""What an artifact document is refused with: where (a JSON Pointer into the document) and why.

The pointer lets an editor, the CLI or a problem detail show the exact spot, whatever the file's
format (YAML and JSON documents have the same pointers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from apimcp.artifacts.json_retain import parse_pointer

_BAD_ESCAPE = re.compile(r"~(?![01])")
MAX_POINTER_SEGMENTS = 64
"""Segments of a JSON pointer in an output filter: deeper than any answer an agent reads, and what keeps
the walks along pointers shallow."""


class ArtifactError(ValueError):
    """An artifact document that cannot be attached: `path` is a JSON Pointer ("" for the whole document)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.path or '(document)'}: {self.problem}"


def pointer(parts: Iterable[str | int]) -> str:
    """The JSON Pointer (RFC 6901) of a path of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def pointer_problem(text: str, *, root_allowed: bool = False) -> str | None:
    """Why `text` is not a JSON Pointer (None when it is). The root ("") is one only where `root_allowed`."""
    if not text:
        return None if root_allowed else "the empty pointer names the whole document; start with /"
    if not text.startswith("/"):
        return "a JSON pointer starts with /"
    if _BAD_ESCAPE.search(text):
        return "in a JSON pointer ~ is written ~0 and / inside a name ~1"
    return None


class PlaceError(ValueError):
    """A problem inside one part of a document: `where` are the keys and indexes from that part down."""

    def __init__(self, where: tuple[str | int, ...], problem: str) -> None:
        super().__init__(where, problem)
        self.where = where
        self.problem = problem


def pointer_segments(text: object, where: tuple[str | int, ...]) -> tuple[str, ...]:
    """The unescaped segments of an RFC 6901 pointer (`""`, the whole document, is `()`), at most
    `MAX_POINTER_SEGMENTS` of them; PlaceError at `where` otherwise."""
    if not isinstance(text, str):
        raise PlaceError(where, f"a JSON pointer is a string, not {type(text).__name__}")
    problem = pointer_problem(text, root_allowed=True)
    if problem is not None:
        raise PlaceError(where, problem)
    segments = parse_pointer(text)
    if len(segments) > MAX_POINTER_SEGMENTS:
        raise PlaceError(where, f"a JSON pointer here has at most {MAX_POINTER_SEGMENTS} segments, not {len(segments)}")
    return segments
