"""Scopes per tool: which tools a caller's token lets it list and call.

Tools without scopes of their own need only the exposition's. A caller's `tools/list` leaves out the tools
it may not call; the filtered page is built once per distinct set of relevant scopes (bounded), so callers
with the same rights share it.
"""

from __future__ import annotations

from collections.abc import Mapping

from apimcp.protocol import Page, Tool
from apimcp.protocol.caller import Caller

MAX_PAGES = 256


class ToolAccess:
    def __init__(self, tool_scopes: Mapping[str, tuple[str, ...]]) -> None:
        self._scopes = {tool: frozenset(scopes) for tool, scopes in tool_scopes.items() if scopes}
        self._relevant = frozenset().union(*self._scopes.values()) if self._scopes else frozenset()
        self._pages: dict[tuple[int, frozenset[str]], Page[Tool]] = {}

    def __bool__(self) -> bool:
        return bool(self._scopes)

    def missing(self, caller: Caller | None, tool: str) -> tuple[str, ...]:
        """The scopes `caller` lacks to call `tool` (none: it may)."""
        needed = self._scopes.get(tool)
        if not needed:
            return ()
        held = caller.scopes if caller is not None else frozenset()
        return tuple(sorted(needed - held))

    def needed(self, tool: str) -> tuple[str, ...]:
        """Every scope calling `tool` needs (what a step-up challenge names: the missing ones alone would make a
        client that asks for just those lose the ones it had)."""
        return tuple(sorted(self._scopes.get(tool, ())))

    def visible(self, caller: Caller | None, page: Page[Tool]) -> Page[Tool]:
        """`page` without the tools `caller` may not call."""
        held = (caller.scopes if caller is not None else frozenset()) & self._relevant
        key = (id(page), held)
        cached = self._pages.get(key)
        if cached is None:
            if len(self._pages) >= MAX_PAGES:
                self._pages.clear()
            items = tuple(t for t in page.items if self._scopes.get(t.name, frozenset()) <= held)
            cached = self._pages[key] = Page(items=items, next_cursor=page.next_cursor)
        return cached
