"""Warnings gathered while a description is imported: what was repaired or left out, and where.

Each names the operation being converted when the problem was found and the JSON pointer of the
problem in the description. A definition shared by many operations is converted once, so its
problems are told once, under the first operation that uses it. The count is bounded: a description
broken everywhere gets the first warnings and a line saying how many more there were.
"""

from __future__ import annotations

import re

from apimcp.catalog.model import DescriptionWarning
from apimcp.safety.shown_urls import shown_location

DEFAULT_MAX_WARNINGS = 500
_OPERATION_POINTER = re.compile(r"^/paths/([^/]+)/(get|put|post|delete|options|head|patch|trace)(?:/|$)")


class WarningLog:
    def __init__(self, main_uri: str, max_warnings: int = DEFAULT_MAX_WARNINGS) -> None:
        self._main_uri = main_uri
        self._max = max_warnings
        self._seen: set[tuple[str, str]] = set()
        self._items: list[DescriptionWarning] = []
        self._dropped = 0
        self.operation: str | None = None
        """The operation being converted (`GET /pets`), named by the warnings found meanwhile."""

    def add(self, uri: str, pointer: str, problem: str, operation: str | None = None) -> None:
        location = pointer or "/"
        if uri != self._main_uri:  # another document: named as a message names a URL
            location = f"{shown_location(uri)}#{pointer}"
        key = (location, problem)
        if key in self._seen:
            return
        self._seen.add(key)
        if len(self._items) >= self._max:
            self._dropped += 1
            return
        self._items.append(DescriptionWarning(location, problem, operation or self.operation))

    def add_at(self, pointer: str, problem: str) -> None:
        """A problem in the main document, named by the operation its pointer lies under (if any)."""
        found = _OPERATION_POINTER.match(pointer)
        operation = None
        if found:
            path = found.group(1).replace("~1", "/").replace("~0", "~")
            operation = f"{found.group(2).upper()} {path}"
        self.add(self._main_uri, pointer, problem, operation)

    def warnings(self) -> tuple[DescriptionWarning, ...]:
        if not self._dropped:
            return tuple(self._items)
        more = DescriptionWarning("/", f"{self._dropped} more warnings were left out (at most {self._max} are kept)")
        return (*self._items, more)
