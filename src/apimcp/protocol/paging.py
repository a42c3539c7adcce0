"""Lists served in pages of at most `max_list_page_items`, whatever the handler returns.

A handler returns whole lists (one `Page`, no cursor): the engine cuts it, the first time a given list is
asked for, into pages that keep their identity (so each is encoded once per revision, like a whole list),
and names each next page by a cursor: the page's position and a token drawn for that list. A cursor from a
list that has since changed (another snapshot, another caller's tools) names a token nobody holds any more
and is refused with -32602, so a client never stitches pages of two lists together. A handler that pages by
itself says so (`McpHandler.pages_itself`) and gets the client's cursors.
"""

from __future__ import annotations

import secrets
import weakref
from typing import Any, TypeVar

from apimcp.protocol.errors import invalid_params
from apimcp.protocol.models import Page

T = TypeVar("T")


class Pager:
    def __init__(self, size: int) -> None:
        self.size = size
        self._cut: weakref.WeakKeyDictionary[Page[Any], tuple[str, list[Page[Any]]]] = weakref.WeakKeyDictionary()

    def page(self, whole: Page[T], cursor: str | None, what: str) -> Page[T]:
        """The page `cursor` names of `whole` (the first without one)."""
        if cursor is None and len(whole.items) <= self.size:
            return whole
        cut = self._cut.get(whole)
        if cut is None:
            cut = self._cut[whole] = self._cut_up(whole)
        token, pages = cut
        if cursor is None:
            return pages[0]
        index, dot, given = cursor.partition(".")
        if not dot or given != token or not index.isdigit() or not 0 < int(index) < len(pages):
            raise invalid_params(
                f"Invalid cursor: it names no page of the current {what} list (it may have changed): list again "
                "from the start",
                {"field": "cursor"},
            )
        return pages[int(index)]

    def _cut_up(self, whole: Page[T]) -> tuple[str, list[Page[Any]]]:
        token = secrets.token_urlsafe(9)
        items = list(whole.items)
        starts = range(0, max(1, len(items)), self.size)
        pages: list[Page[Any]] = []
        for number, start in enumerate(starts):
            last = number == len(starts) - 1
            pages.append(Page(items=tuple(items[start : start + self.size]),
                              next_cursor=None if last else f"{number + 1}.{token}"))  # fmt: skip
        return token, pages
