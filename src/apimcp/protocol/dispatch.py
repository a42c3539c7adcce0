"""The MCP methods both eras share: read params, call the handler, shape the result.

Each method validates its params (a wrong type is -32602 naming the field),
calls the handler and returns the result shaped for the context's revision.
Era-specific methods (initialize, ping, server/discover, subscriptions...)
live with their era in legacy.py and modern.py.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from apimcp.protocol import dialects
from apimcp.protocol.context import RequestContext
from apimcp.protocol.errors import McpError, invalid_params
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.models import CallToolResult, CompletionRef, Page, PromptRef, ResourceTemplateRef, TextContent
from apimcp.protocol.paging import Pager

log = logging.getLogger("apimcp.protocol")

Method = Callable[[RequestContext, JsonObject], Awaitable[JsonObject]]

CACHEABLE_METHODS = frozenset(
    {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The only methods that may answer `input_required` (2026-07-28) or ask the client for input."""


class ToolError(Exception):
    """Raise from `call_tool` to report a tool execution error (`isError: true`) with this message."""


def _string(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str):
        raise invalid_params(f'"{name}" must be a string', {"field": name})
    return value


def _object(params: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_params(f'"{name}" must be an object', {"field": name})
    return value


def _cursor(params: Mapping[str, Any]) -> str | None:
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise invalid_params('"cursor" must be a string', {"field": "cursor"})
    return cursor


def _string_map(value: dict[str, Any], name: str) -> dict[str, str]:
    for key, item in value.items():
        if not isinstance(item, str):
            raise invalid_params(f'"{name}.{key}" must be a string', {"field": f"{name}.{key}"})
    return value


class Dispatcher:
    """Runs the shared MCP methods of one handler, offering only the features it declares."""

    def __init__(self, handler: McpHandler, page_size: int = 10_000) -> None:
        self.handler = handler
        self._pager = Pager(page_size)
        features = handler.features
        self.methods: dict[str, Method] = {}
        if features.tools:
            self.methods["tools/list"] = self.list_tools
            self.methods["tools/call"] = self.call_tool
        if features.prompts:
            self.methods["prompts/list"] = self.list_prompts
            self.methods["prompts/get"] = self.get_prompt
        if features.resources:
            self.methods["resources/list"] = self.list_resources
            self.methods["resources/templates/list"] = self.list_resource_templates
            self.methods["resources/read"] = self.read_resource
        if features.completions:
            self.methods["completion/complete"] = self.complete

    async def _listed(
        self, fetch: Callable[[RequestContext, str | None], Awaitable[Page[Any]]], ctx: RequestContext,
        cursor: str | None, what: str,
    ) -> Page[Any]:  # fmt: skip
        """The page a client asks for: the handler's own, or one the engine cuts from the whole list."""
        if self.handler.pages_itself:
            return await fetch(ctx, cursor)
        return self._pager.page(await fetch(ctx, None), cursor, what)

    async def list_tools(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        page = await self._listed(self.handler.list_tools, ctx, _cursor(params), "tools")
        return dialects.tools_page(page, ctx.revision, self._task_support if self.handler.features.tasks else None)

    def _task_support(self, name: str) -> str:
        policy = self.handler.task_policy(name)
        return policy.support if policy is not None else "forbidden"

    async def call_tool(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        name = _string(params, "name")
        arguments = _object(params, "arguments")
        try:
            result = await self.handler.call_tool(ctx, name, arguments)
        except ToolError as exc:
            result = CallToolResult(content=(TextContent(text=str(exc)),), is_error=True)
        return dialects.call_tool_result(result, ctx.revision)

    async def list_prompts(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        page = await self._listed(self.handler.list_prompts, ctx, _cursor(params), "prompts")
        return dialects.prompts_page(page, ctx.revision)

    async def get_prompt(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        name = _string(params, "name")
        arguments = _string_map(_object(params, "arguments"), "arguments")
        result = await self.handler.get_prompt(ctx, name, arguments)
        return dialects.get_prompt_result(result, ctx.revision)

    async def list_resources(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        page = await self._listed(self.handler.list_resources, ctx, _cursor(params), "resources")
        return dialects.resources_page(page, ctx.revision)

    async def list_resource_templates(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        page = await self._listed(self.handler.list_resource_templates, ctx, _cursor(params), "resource templates")
        return dialects.resource_templates_page(page, ctx.revision)

    async def read_resource(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        result = await self.handler.read_resource(ctx, _string(params, "uri"))
        return dialects.read_resource_result(result, ctx.revision)

    async def complete(self, ctx: RequestContext, params: JsonObject) -> JsonObject:
        raw_ref = _object(params, "ref")
        ref: CompletionRef
        if raw_ref.get("type") == "ref/prompt":
            ref = PromptRef(name=_string(raw_ref, "name"))
        elif raw_ref.get("type") == "ref/resource":
            ref = ResourceTemplateRef(uri=_string(raw_ref, "uri"))
        else:
            raise invalid_params('"ref.type" must be "ref/prompt" or "ref/resource"', {"field": "ref.type"})
        argument = _object(params, "argument")
        name, value = _string(argument, "name"), _string(argument, "value")
        context = _object(params, "context")
        context_arguments = _string_map(_object(context, "arguments"), "context.arguments")
        result = await self.handler.complete(ctx, ref, name, value, context_arguments)
        return dialects.completion(result)


def internal_error(method: str, exc: BaseException) -> McpError:
    """Log an unexpected handler failure; the client learns only that it happened."""
    log.error("handler failed on %s", method, exc_info=exc)
    return McpError(-32603, "Internal error")
