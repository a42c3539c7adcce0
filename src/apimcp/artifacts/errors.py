"""What an artifact document is refused with: where (a JSON Pointer into the document) and why.

The pointer lets an editor, the CLI or a problem detail show the exact spot, whatever the file's
format (YAML and JSON documents have the same pointers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_BAD_ESCAPE = re.compile(r"~(?![01])")


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
