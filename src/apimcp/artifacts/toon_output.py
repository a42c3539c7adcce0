"""TOON text for an output filter, refused before it is written when it would be far larger than the JSON.

TOON indents each nesting level, and writes a line for every member of an object and every item of a list
that is not a table: a line at depth d starts with 2·d spaces, where JSON writes a comma. So an answer that
is deep, with many small members down there, grows with its depth: 10,000 empty objects 250 levels down, a
31 KB answer (small enough to be filtered on the event loop), made 5.2 MB of TOON, 164 times its size, and a
5 MB answer in a shaping process would have made 800 MB. Ordinary answers make about as much TOON as JSON
(a table of rows less, nested records a little more).

So before encoding, the lines TOON would write are counted, each with its indentation, following the
encoder's choice of form for each value (a list of primitives on one line, a uniform list of objects as one
row per object, anything else as lines of its own); the count stops as soon as the text would pass
`max(MAX_GROWTH * the JSON's size, ALLOWANCE)`, and `ToonTooLarge` is raised instead of encoding. What the
encoder wrote is checked against the same budget too, should its layout ever differ from this count's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import orjson
import toon_format

__all__ = ["ALLOWANCE", "MAX_GROWTH", "ToonTooLarge", "toon_text"]

MAX_GROWTH: Final = 4
"""TOON text may be this many times the JSON's size (more than ordinary answers ever make)..."""
ALLOWANCE: Final = 64 * 1024
"""...or this many characters, whichever is more: a small answer may make some more."""
_INDENT: Final = 2
"""Spaces per level: the encoder's default, which the filters use."""


class ToonTooLarge(Exception):
    """The TOON text would pass its budget; the message says by how much, never what the value holds."""


def toon_text(value: Any) -> str:
    """`value` as TOON, or ToonTooLarge when that text would pass `max(MAX_GROWTH * its JSON, ALLOWANCE)`."""
    json_size = len(orjson.dumps(value))
    budget = max(MAX_GROWTH * json_size, ALLOWANCE)
    if not _Lines(json_size, budget).fit(value):
        raise ToonTooLarge(
            f"the TOON text would pass {budget} characters, the larger of {MAX_GROWTH} times the JSON's {json_size} "
            f"and {ALLOWANCE}"
        )
    text = toon_format.encode(value)
    if len(text) > budget:
        raise ToonTooLarge(f"the TOON text has {len(text)} characters, more than {budget} (the JSON has {json_size})")
    return text


class _Lines:
    """Counts the characters of TOON's lines, from the JSON's size, adding each line's indentation and end (and
    the "- " of an item): what makes TOON grow with depth. Primitives are counted where they stand, and only
    non-empty objects and lists wait their turn."""

    def __init__(self, json_size: int, budget: int) -> None:
        self._size = json_size
        self._budget = budget
        self._pending: list[tuple[Any, int, bool]] = []
        """(object or list, depth of its first line, whether it is a list's item), walked without recursion."""

    def fit(self, value: Any) -> bool:
        """Whether the text stays within the budget; the count stops once it does not."""
        if isinstance(value, dict):
            self._object(value, 0, member=False)
        elif isinstance(value, list) and value:
            self._list(value, 0, as_item=False)
        else:
            self._line(0)
        pending = self._pending
        while pending:
            if self._size > self._budget:
                return False
            container, depth, as_item = pending.pop()
            if isinstance(container, list):
                self._list(container, depth, as_item=as_item)
            elif as_item:
                self._members(container.values(), depth + 1)  # the first one on the item's "- " line
            else:
                self._object(container, depth, member=True)
        return self._size <= self._budget

    def _line(self, depth: int, extra: int = 0, count: int = 1) -> None:
        self._size += count * (_INDENT * depth + extra + 1)

    def _object(self, value: dict[str, Any], depth: int, *, member: bool) -> None:
        """An object that is a member at `depth` (its key's line, then its members one level in), or the root (its
        members at `depth`); either as a header and one row per member when those are uniform objects."""
        keyed = len(value) >= 2 and _uniform(list(value.values()))
        if member or keyed:
            self._line(depth)
        if keyed:
            self._line(depth + 1, count=len(value))
        else:
            self._members(value.values(), depth + 1 if member else depth)

    def _members(self, members: Iterable[Any], depth: int) -> None:
        """An object's members at `depth`: a line each, and what a non-empty object or list holds below it."""
        lines = 0
        for member in members:
            lines += 1
            if member and isinstance(member, (dict, list)):
                self._pending.append((member, depth, False))
                lines -= 1  # its line is counted with it
        self._line(depth, count=lines)

    def _list(self, value: list[Any], depth: int, *, as_item: bool) -> None:
        """A non-empty list whose header is written at `depth`: one line of primitives, rows (not for a list that
        is itself an item), or its items a level in."""
        self._line(depth, 2 if as_item else 0)
        containers = [item for item in value if isinstance(item, (dict, list))]
        if not containers:
            return
        if not as_item and len(containers) == len(value) and _uniform(value):
            self._line(depth + 1, count=len(value))
            return
        self._line(depth + 1, 2, count=len(value) - len(containers))  # "- 1"
        for item in containers:
            if item:
                self._pending.append((item, depth + 1, True))
            else:
                self._line(depth + 1, 1 if isinstance(item, dict) else 2)  # "-", "- [0]:"


def _uniform(objects: list[Any]) -> bool:
    """Whether TOON writes `objects` as a table: non-empty objects with the same keys, each column primitives or
    itself such objects (the encoder's rule); checked without recursion."""
    pending = [objects]
    while pending:
        column = pending.pop()
        first = column[0]
        if not isinstance(first, dict) or not first:
            return False
        keys = first.keys()
        if any(not isinstance(item, dict) or item.keys() != keys for item in column):
            return False
        for key in keys:
            values = [item[key] for item in column]
            if any(isinstance(member, (dict, list)) for member in values):
                pending.append(values)
    return True
