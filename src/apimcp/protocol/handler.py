"""The interface between the engine and whatever serves MCP requests.

The engine knows nothing of APIs: a gateway exposition, the conformance
fixture and the demo server are all `McpHandler` subclasses. A subclass
overrides the methods for the features it declares in `features`; the engine
answers -32601 for the rest, validates and shapes everything on the wire, and
never needs to change when a new handler appears.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.protocol.context import RequestContext
from apimcp.protocol.errors import method_not_found
from apimcp.protocol.models import (
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    GetPromptResult,
    Implementation,
    Page,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ServerFeatures,
    Tool,
)
from apimcp.protocol.observe import RequestObserver
from apimcp.protocol.tasks.policy import TaskPolicy

NO_CACHE = CacheHint(ttl_ms=0, scope="private")


class McpHandler:
    """Base class of MCP servers served by the engine."""

    server_info: Implementation = Implementation(name="apimcp", version="0")
    instructions: str | None = None
    features: ServerFeatures = ServerFeatures()
    pages_itself: bool = False
    """Whether the list methods take cursors; by default they return whole lists and the engine pages them
    (`EndpointLimits.max_list_page_items`)."""
    observer: RequestObserver | None = None
    """Hears of every request once it is answered (audit, telemetry); None costs nothing."""

    def cache_hint(self, method: str) -> CacheHint:
        """ttlMs/cacheScope for a 2026-07-28 cacheable result of `method` (default: do not cache)."""
        return NO_CACHE

    def tool_definition(self, name: str) -> Tool | None:
        """The tool called `name`, when the handler can tell without I/O.

        The engine reads its `x-mcp-header` annotations to validate Mcp-Param-* headers of
        2026-07-28 calls; a handler without such annotations may keep the default.
        """
        return None

    def task_policy(self, name: str) -> TaskPolicy | None:
        """How calls of tool `name` may run as tasks (None: never), when `features.tasks` is set."""
        return None

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        raise method_not_found("tools/list")

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        raise method_not_found("tools/call")

    async def list_prompts(self, ctx: RequestContext, cursor: str | None) -> Page[Prompt]:
        raise method_not_found("prompts/list")

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        raise method_not_found("prompts/get")

    async def list_resources(self, ctx: RequestContext, cursor: str | None) -> Page[Resource]:
        raise method_not_found("resources/list")

    async def list_resource_templates(self, ctx: RequestContext, cursor: str | None) -> Page[ResourceTemplate]:
        return Page(items=())

    async def read_resource(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        raise method_not_found("resources/read")

    async def subscribe_resource(self, ctx: RequestContext, uri: str) -> None:
        """Called before a client subscribes to `uri`; raise to refuse (e.g. ResourceNotFound)."""

    async def complete(
        self,
        ctx: RequestContext,
        ref: CompletionRef,
        argument: str,
        value: str,
        context_arguments: Mapping[str, str],
    ) -> Completion:
        return Completion()
