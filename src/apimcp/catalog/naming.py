"""Tool names: readable, valid everywhere, deterministic and unique within a service.

Clients and model APIs accept `^[A-Za-z0-9_.-]{1,64}$` at most, and a client may
add its own prefix, so names are snake_case and never longer than the budget
(64 by default, the optional prefix counted in). A name over budget keeps its
readable head and ends with a short hash of the whole name, so the same input
always gives the same name.
"""

from __future__ import annotations

import hashlib
import re

MAX_TOOL_NAME = 64
VALID_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_HASH_CHARS = 8

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NOT_NAME = re.compile(r"[^A-Za-z0-9]+")


def snake_case(text: str) -> str:
    """`listPets`, `repos/get-content`, `GET /pets/{id}` -> `list_pets`, `repos_get_content`, `get_pets_id`."""
    spaced = _CAMEL_BOUNDARY.sub("_", text)
    return _NOT_NAME.sub("_", spaced).strip("_").lower()


def short_hash(text: str, length: int = _HASH_CHARS) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def fit(name: str, prefix: str = "", budget: int = MAX_TOOL_NAME) -> str:
    """`prefix + name`, shortened deterministically when it exceeds `budget` characters."""
    if len(prefix) > budget - _HASH_CHARS - 2:
        raise ValueError(f"tool name prefix {prefix!r} leaves no room for names within {budget} characters")
    full = prefix + (name or "tool")
    if len(full) <= budget:
        return full
    head = full[: budget - _HASH_CHARS - 1].rstrip("_.-")
    return f"{head}_{short_hash(full)}"


class NameAllocator:
    """Hands out unique tool names; a name already taken gets a hash of what it stands for."""

    def __init__(self, prefix: str = "", budget: int = MAX_TOOL_NAME) -> None:
        if prefix and not VALID_TOOL_NAME.fullmatch(prefix):
            raise ValueError(f"tool name prefix {prefix!r} may only contain letters, digits, '_', '.' and '-'")
        self._prefix = prefix
        self._budget = budget
        self._taken: set[str] = set()

    def allocate(self, base: str, identity: str) -> str:
        """A unique name for `base`; `identity` (e.g. `GET /pets`) disambiguates a collision."""
        name = fit(base, self._prefix, self._budget)
        if name in self._taken:
            suffix = "_" + short_hash(identity, 6)
            name = fit(base, self._prefix, self._budget - len(suffix)) + suffix
            counter = 2
            while name in self._taken:  # a hash collision: vanishingly rare, still handled
                name = fit(f"{base}_{counter}", self._prefix, self._budget - len(suffix)) + suffix
                counter += 1
        self._taken.add(name)
        return name
