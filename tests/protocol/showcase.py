"""A handler exercising every shape the engine must carry, for the protocol tests.

Each tool returns one kind of result (audio, resource link, array-valued
structured content...) so that a test can check how each revision sees it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import orjson

from apimcp.protocol import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    Implementation,
    McpHandler,
    Page,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceLink,
    ResourceNotFound,
    ResourceTemplate,
    ServerFeatures,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    ToolError,
    UrlElicitationRequired,
    invalid_params,
)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
ICON = Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=("48x48",))
EMPTY = {"type": "object", "properties": {}}


def _tool(name: str, **kwargs: Any) -> Tool:
    return Tool(name=name, input_schema=kwargs.pop("input_schema", EMPTY), **kwargs)


TOOLS = (
    _tool(
        "echo",
        title="Echo",
        description="Echo the text back",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        annotations=ToolAnnotations(read_only_hint=True),
        icons=(ICON,),
        meta={"example.com/tag": "demo"},
    ),
    _tool("structured_object", output_schema={"type": "object", "properties": {"n": {"type": "integer"}}}),
    _tool("structured_array", output_schema={"type": "array", "items": {"type": "integer"}}),
    _tool("structured_only"),
    _tool("audio"),
    _tool("image"),
    _tool("link"),
    _tool("embedded"),
    _tool("annotated_text"),
    _tool("progress"),
    _tool("logs"),
    _tool("elicit"),
    _tool("elicit_twice"),
    _tool("sample"),
    _tool("roots"),
    _tool("everything_at_once"),
    _tool("url_elicitation"),
    _tool("fail"),
    _tool("crash"),
    _tool("slow"),
    _tool("notify_changes"),
    _tool("encode_arguments"),
    _tool("deep_result"),
    _tool(
        "regional",
        input_schema={
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "query": {"type": "string"},
            },
        },
    ),
)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}

PROMPTS = (
    Prompt(
        name="greet",
        title="Greeting",
        description="Greets someone",
        arguments=(PromptArgument(name="who", title="Who", description="Name", required=True),),
        icons=(ICON,),
    ),
)
RESOURCES = (
    Resource(
        uri="test://text",
        name="text",
        title="Some text",
        mime_type="text/plain",
        size=5,
        annotations=Annotations(audience=("user",), priority=0.5, last_modified="2025-01-01T00:00:00Z"),
    ),
    Resource(uri="test://blob", name="blob", mime_type="image/png"),
)
TEMPLATES = (ResourceTemplate(uri_template="test://items/{id}", name="item", title="An item"),)
SLOW_STARTED = asyncio.Event()


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=text),))


class Showcase(McpHandler):
    pages_itself = True  # its tools/list shows the engine passing cursors through
    server_info = Implementation(
        name="showcase",
        version="1.2.3",
        title="Showcase server",
        description="Exercises the engine",
        website_url="https://example.com",
        icons=(ICON,),
    )
    instructions = "Use the tools to test the engine."
    features = ServerFeatures(
        tools=True,
        tools_list_changed=True,
        prompts=True,
        prompts_list_changed=True,
        resources=True,
        resources_subscribe=True,
        resources_list_changed=True,
        logging=True,
        completions=True,
    )

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    def cache_hint(self, method: str) -> CacheHint:
        if method == "resources/read":
            return CacheHint(ttl_ms=1000, scope="private")
        return CacheHint(ttl_ms=300000, scope="public")

    def tool_definition(self, name: str) -> Tool | None:
        return TOOLS_BY_NAME.get(name)

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        if cursor is None:
            return Page(items=TOOLS[:10], next_cursor="page-2")
        if cursor == "page-2":
            return Page(items=TOOLS[10:])
        raise invalid_params("Invalid cursor", {"field": "cursor"})

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        if name == "echo":
            return _text(str(arguments.get("text")))
        if name == "structured_object":
            return CallToolResult(content=(TextContent(text='{"n": 1}'),), structured_content={"n": 1})
        if name == "structured_array":
            return CallToolResult(content=(TextContent(text="[1, 2]"),), structured_content=[1, 2])
        if name == "structured_only":
            return CallToolResult(structured_content={"only": True})
        if name == "audio":
            return CallToolResult(content=(AudioContent(data=WAV, mime_type="audio/wav"),))
        if name == "image":
            return CallToolResult(content=(ImageContent(data=PNG, mime_type="image/png"),))
        if name == "link":
            link = ResourceLink(uri="test://text", name="text", title="Some text", description="A text", icons=(ICON,))
            return CallToolResult(content=(link,))
        if name == "embedded":
            blob = BlobResourceContents(uri="test://blob", blob=PNG, mime_type="image/png", meta={"k": "v"})
            return CallToolResult(content=(EmbeddedResource(resource=blob),))
        if name == "annotated_text":
            annotations = Annotations(audience=("assistant",), priority=1.0, last_modified="2025-06-01T00:00:00Z")
            return CallToolResult(content=(TextContent(text="hi", annotations=annotations, meta={"m": 1}),))
        if name == "progress":
            for step in (0, 50, 100):
                await ctx.progress(step, 100, f"step {step}")
            return _text("done")
        if name == "logs":
            await ctx.log("debug", "debug message")
            await ctx.log("info", "info message", logger="showcase")
            await ctx.log("error", {"problem": "error message"})
            return _text("logged")
        if name == "elicit":
            answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
            return _text(f"Hello, {answer.get('content', {}).get('name')}!")
        if name == "elicit_twice":
            first = await ctx.elicit("First?", {"type": "object", "properties": {"a": {"type": "string"}}})
            ctx.state["first"] = first.get("content", {}).get("a")
            second = await ctx.elicit("Second?", {"type": "object", "properties": {"b": {"type": "string"}}})
            return _text(f"{ctx.state['first']}+{second.get('content', {}).get('b')}")
        if name == "sample":
            reply = await ctx.sample([{"role": "user", "content": {"type": "text", "text": "Hi?"}}], 50)
            return _text(f"model said: {reply.get('content', {}).get('text')}")
        if name == "roots":
            roots = await ctx.list_roots()
            return _text(",".join(r.get("uri", "") for r in roots.get("roots", [])))
        if name == "everything_at_once":
            from apimcp.protocol.models import elicitation_form, roots_request, sampling_request

            answers = await ctx.request_inputs(
                {
                    "ask": elicitation_form("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}),
                    "llm": sampling_request([{"role": "user", "content": {"type": "text", "text": "x"}}], 10),
                    "where": roots_request(),
                }
            )
            return _text(",".join(sorted(answers)))
        if name == "url_elicitation":
            if not ctx.state.get("visited") and not arguments.get("done"):
                raise UrlElicitationRequired(
                    [{"message": "Connect your account", "url": "https://example.com/connect", "elicitationId": "e1"}]
                )
            return _text("connected")
        if name == "fail":
            raise ToolError("the backend said no")
        if name == "crash":
            raise RuntimeError("secret internal detail")
        if name == "slow":
            SLOW_STARTED.set()
            try:
                await ctx.progress(1, 2, "started")
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.append(str(ctx.request_id))
                raise
            return _text("finished")
        if name == "notify_changes":
            ctx.changes.tools_changed()
            ctx.changes.prompts_changed()
            ctx.changes.resources_changed()
            ctx.changes.resource_updated("test://text")
            ctx.changes.resource_updated("test://other")
            return _text("notified")
        if name == "encode_arguments":  # as an HTTP backend does with a JSON body
            return _text(f"{len(orjson.dumps(arguments))} bytes")
        if name == "deep_result":
            nested: Any = 1
            for _ in range(int(arguments.get("depth", 300))):
                nested = [nested]
            return CallToolResult(content=(TextContent(text="deep"),), structured_content={"value": nested})
        if name == "regional":
            return _text(f"{arguments.get('region')}:{arguments.get('count')}")
        raise invalid_params(f"Unknown tool: {name}")

    async def list_prompts(self, ctx: RequestContext, cursor: str | None) -> Page[Prompt]:
        return Page(items=PROMPTS)

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        if name != "greet":
            raise invalid_params(f"Unknown prompt: {name}")
        who = arguments.get("who")
        if who is None:
            raise invalid_params('Missing required argument "who"', {"field": "arguments.who"})
        return GetPromptResult(
            description="A greeting",
            messages=(
                PromptMessage(role="user", content=TextContent(text=f"Say hello to {who}")),
                PromptMessage(role="assistant", content=AudioContent(data=WAV, mime_type="audio/wav")),
            ),
        )

    async def list_resources(self, ctx: RequestContext, cursor: str | None) -> Page[Resource]:
        return Page(items=RESOURCES)

    async def list_resource_templates(self, ctx: RequestContext, cursor: str | None) -> Page[ResourceTemplate]:
        return Page(items=TEMPLATES)

    async def read_resource(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        if uri == "test://text":
            return ReadResourceResult(contents=(TextResourceContents(uri=uri, text="hello", mime_type="text/plain"),))
        if uri == "test://blob":
            return ReadResourceResult(contents=(BlobResourceContents(uri=uri, blob=PNG, mime_type="image/png"),))
        if uri.startswith("test://items/"):
            item = uri.rsplit("/", 1)[1]
            return ReadResourceResult(contents=(TextResourceContents(uri=uri, text=f"item {item}"),))
        raise ResourceNotFound(uri)

    async def subscribe_resource(self, ctx: RequestContext, uri: str) -> None:
        if not uri.startswith("test://"):
            raise ResourceNotFound(uri)

    async def complete(
        self, ctx: RequestContext, ref: CompletionRef, argument: str, value: str, context_arguments: Mapping[str, str]
    ) -> Completion:
        names = ["alice", "albert", "bob"]
        return Completion(values=[n for n in names if n.startswith(value)], total=3, has_more=False)
