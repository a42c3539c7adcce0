"""An exposition's progressive discovery: its search index, filters and compact hits, built once per snapshot.

The exposition hands it the tools and what it knows of each (the `METHOD /path` aliases that the index ranks
on, each operation's member service and tags); search mode and code mode both answer `search_tools` and
`describe_tools` from it. Searches that embed their query run off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence, Set
from typing import Any

from apimcp.protocol.models import CallToolResult, Page, Tool
from apimcp.toolsearch.compact import CompactHits
from apimcp.toolsearch.describe import describe_result
from apimcp.toolsearch.facets import Facets
from apimcp.toolsearch.hybrid import HybridIndex, build_index
from apimcp.toolsearch.index import ToolIndex
from apimcp.toolsearch.tools import search_page, search_result


class Discovery:
    """search_tools and describe_tools over `tools`."""

    def __init__(
        self,
        tools: Sequence[Tool],
        paths: Mapping[str, Sequence[str]],
        service_of: Mapping[str, str],
        tags_of: Mapping[str, Sequence[str]],
    ) -> None:
        """`paths`: each tool's `METHOD /path` aliases; `service_of`, `tags_of`: what search_tools filters on."""
        self.index: ToolIndex = build_index(tools, paths)  # its vectors come in the background
        self.facets = Facets.of(tools, service_of, tags_of)
        self._hits = CompactHits(self.index.tools)
        self.page: Page[Tool] = search_page(list(self.facets.services))
        """search_tools (with its service filter when there are several), describe_tools, call_tool."""

    @property
    def tools(self) -> Mapping[str, Tool]:
        return self.index.tools

    @property
    def read_only(self) -> frozenset[str]:
        return self.facets.read_only

    async def search(self, arguments: Mapping[str, Any], allowed: Set[str] | None) -> CallToolResult:
        """The compact hits for `arguments` among the tools `allowed` (every one when None); raises ToolSearchError."""
        found = (self.index, arguments, allowed, self.facets, self._hits)
        if isinstance(self.index, HybridIndex) and self.index.semantic:
            # embedding the query takes milliseconds of CPU: off the event loop (ONNX frees the GIL)
            return await asyncio.to_thread(search_result, *found)
        return search_result(*found)

    def describe(self, arguments: Mapping[str, Any], allowed: Set[str] | None) -> CallToolResult:
        """Full definitions of the tools `arguments` names; raises ToolSearchError."""
        return describe_result(self.index.tools, arguments, allowed)
