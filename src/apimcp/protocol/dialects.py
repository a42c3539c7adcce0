"""Per-revision shaping: the one place where wire formats of results differ.

Handlers build the neutral model (models.py) once; these functions turn it
into the JSON a given revision defines. Fields a revision does not know are
dropped; content types it does not know are down-levelled to the nearest
equivalent it does (audio becomes an embedded blob resource, a resource link
becomes text); structured output is wrapped in an object where a revision
requires one. Shaped list items are memoised per revision because lists are
served far more often than they change.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import orjson

from apimcp.protocol.encoded_lists import EncodedLists
from apimcp.protocol.errors import (
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    McpError,
    MissingClientCapability,
    ResourceNotFound,
    UrlElicitationRequired,
)
from apimcp.protocol.jsonrpc import JsonObject
from apimcp.protocol.models import (
    NO_VALUE,
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    Completion,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    Implementation,
    InputRequest,
    Page,
    Prompt,
    RawJson,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
    ServerFeatures,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from apimcp.protocol.tasks.records import TASKS_EXTENSION
from apimcp.protocol.versions import V2025_11_25, Era, Revision

# --- small helpers ---------------------------------------------------------------------------

_Item = TypeVar("_Item")
_memo: weakref.WeakKeyDictionary[Any, dict[int, JsonObject]] = weakref.WeakKeyDictionary()


def _memoised(shape: Callable[[_Item, Revision], JsonObject]) -> Callable[[_Item, Revision], JsonObject]:
    """Shape each (immutable) list item once per revision."""

    def shaped(item: _Item, rev: Revision) -> JsonObject:
        per_item = _memo.get(item)
        if per_item is None:
            per_item = _memo[item] = {}
        wire = per_item.get(rev.rank)
        if wire is None:
            wire = per_item[rev.rank] = shape(item, rev)
        return wire

    return shaped


def _icons(icons: tuple[Icon, ...], out: JsonObject, rev: Revision) -> None:
    if not icons or not rev.icons:
        return
    wire_icons = []
    for icon in icons:
        wire: JsonObject = {"src": icon.src}
        if icon.mime_type is not None:
            wire["mimeType"] = icon.mime_type
        if icon.sizes:
            wire["sizes"] = list(icon.sizes)
        if icon.theme is not None:
            wire["theme"] = icon.theme
        wire_icons.append(wire)
    out["icons"] = wire_icons


def _meta(meta: Mapping[str, Any] | None, out: JsonObject, rev: Revision) -> None:
    """`_meta` on data objects (tools, content, resources...) exists from 2025-06-18."""
    if meta and rev.structured_output:
        out["_meta"] = dict(meta)


def _title(title: str | None, out: JsonObject, rev: Revision) -> None:
    if title is not None and rev.structured_output:
        out["title"] = title


def _annotations(annotations: Annotations | None, out: JsonObject, rev: Revision) -> None:
    if annotations is None:
        return
    wire: JsonObject = {}
    if annotations.audience is not None:
        wire["audience"] = list(annotations.audience)
    if annotations.priority is not None:
        wire["priority"] = annotations.priority
    if annotations.last_modified is not None and rev.structured_output:
        wire["lastModified"] = annotations.last_modified
    if wire:
        out["annotations"] = wire


# --- server identity and capabilities ----------------------------------------------------


def implementation(impl: Implementation, rev: Revision) -> JsonObject:
    out: JsonObject = {"name": impl.name, "version": impl.version}
    _title(impl.title, out, rev)
    if rev.icons:
        if impl.description is not None:
            out["description"] = impl.description
        if impl.website_url is not None:
            out["websiteUrl"] = impl.website_url
        _icons(impl.icons, out, rev)
    return out


def server_capabilities(features: ServerFeatures, rev: Revision) -> JsonObject:
    caps: JsonObject = {}
    if features.experimental:
        caps["experimental"] = dict(features.experimental)
    if features.logging:
        caps["logging"] = {}
    if features.completions and rev.completions_capability:
        caps["completions"] = {}
    if features.prompts:
        caps["prompts"] = {"listChanged": features.prompts_list_changed}
    if features.resources:
        caps["resources"] = {
            "subscribe": features.resources_subscribe,
            "listChanged": features.resources_list_changed,
        }
    if features.tools:
        caps["tools"] = {"listChanged": features.tools_list_changed}
        if features.tasks and rev.tasks:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        if features.tasks and rev.era is Era.STATELESS:
            caps["extensions"] = {TASKS_EXTENSION: {}}
    return caps


# --- content ---------------------------------------------------------------------------------


def resource_contents(contents: ResourceContents, rev: Revision) -> JsonObject:
    out: JsonObject
    if isinstance(contents, TextResourceContents):
        out = {"uri": contents.uri, "text": contents.text}
    else:
        out = {"uri": contents.uri, "blob": contents.blob}
    if contents.mime_type is not None:
        out["mimeType"] = contents.mime_type
    _meta(contents.meta, out, rev)
    return out


def content_block(block: ContentBlock, rev: Revision, index: int = 0) -> JsonObject:
    """One content block as `rev` defines it, down-levelled when `rev` lacks its type."""
    out: JsonObject
    if isinstance(block, TextContent):
        out = {"type": "text", "text": block.text}
    elif isinstance(block, ImageContent):
        out = {"type": "image", "data": block.data, "mimeType": block.mime_type}
    elif isinstance(block, AudioContent):
        if not rev.audio_content:
            # 2024-11-05 has no audio: keep the bytes as an embedded blob resource.
            blob = BlobResourceContents(uri=f"apimcp:content/{index}", blob=block.data, mime_type=block.mime_type)
            return content_block(EmbeddedResource(resource=blob, annotations=block.annotations), rev, index)
        out = {"type": "audio", "data": block.data, "mimeType": block.mime_type}
    elif isinstance(block, EmbeddedResource):
        out = {"type": "resource", "resource": resource_contents(block.resource, rev)}
    else:
        if not rev.structured_output:
            # Resource links arrived in 2025-06-18; older clients get the link as text.
            label = block.title or block.name
            text = f"{label}: {block.uri}" + (f" ({block.description})" if block.description else "")
            return content_block(TextContent(text=text, annotations=block.annotations), rev, index)
        out = {"type": "resource_link", "uri": block.uri, "name": block.name}
        _title(block.title, out, rev)
        if block.description is not None:
            out["description"] = block.description
        if block.mime_type is not None:
            out["mimeType"] = block.mime_type
        if block.size is not None:
            out["size"] = block.size
        _icons(block.icons, out, rev)
    _annotations(block.annotations, out, rev)
    _meta(block.meta, out, rev)
    return out


def content_blocks(blocks: Sequence[ContentBlock], rev: Revision) -> list[JsonObject]:
    return [content_block(b, rev, i) for i, b in enumerate(blocks)]


# --- tools -----------------------------------------------------------------------------------


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def _object_output_schema(schema: Mapping[str, Any]) -> JsonObject:
    """2025-06-18 and 2025-11-25 require an object outputSchema; wrap anything else as {result}."""
    if _is_object_schema(schema):
        return dict(schema)
    inner = {k: v for k, v in schema.items() if k != "$schema"}
    return {"type": "object", "properties": {"result": inner}, "required": ["result"]}


def _tool_annotations(annotations: ToolAnnotations, title: str | None) -> JsonObject:
    out: JsonObject = {}
    if annotations.title is not None or title is not None:
        out["title"] = annotations.title if annotations.title is not None else title
    for key, value in (
        ("readOnlyHint", annotations.read_only_hint),
        ("destructiveHint", annotations.destructive_hint),
        ("idempotentHint", annotations.idempotent_hint),
        ("openWorldHint", annotations.open_world_hint),
    ):
        if value is not None:
            out[key] = value
    return out


@_memoised
def tool(item: Tool, rev: Revision) -> JsonObject:
    out: JsonObject = {"name": item.name}
    _title(item.title, out, rev)
    if item.description is not None:
        out["description"] = item.description
    out["inputSchema"] = item.input_schema
    if item.output_schema is not None and rev.structured_output:
        out["outputSchema"] = (
            item.output_schema if rev.any_structured_content else _object_output_schema(item.output_schema)
        )
    if rev.tool_annotations:
        # Before 2025-06-18 a tool's title can only travel as annotations.title.
        title = None if rev.structured_output else item.title
        annotations = _tool_annotations(item.annotations or ToolAnnotations(), title)
        if annotations:
            out["annotations"] = annotations
    _icons(item.icons, out, rev)
    _meta(item.meta, out, rev)
    return out


ENCODED_LISTS = EncodedLists()


def _encoded(page: Page[_Item], rev: Revision, shape: Callable[[_Item, Revision], JsonObject]) -> orjson.Fragment:
    """A page's items as JSON, encoded once per revision (within a memory bound): big lists are served by
    copying bytes."""
    return ENCODED_LISTS.get(page, rev.rank, lambda: orjson.dumps([shape(item, rev) for item in page.items]))


_WITH_TASK_SUPPORT = 100
"""Added to a revision's rank to key the encodings of pages that say each tool's task support."""


def tools_page(page: Page[Tool], rev: Revision, task_support: Callable[[str], str] | None = None) -> JsonObject:
    """A tools/list result; `task_support` (2025-11-25 with tasks offered) adds each tool's `execution`."""
    if task_support is not None and rev.tasks:

        def encode() -> bytes:
            return orjson.dumps(
                [{**tool(t, rev), "execution": {"taskSupport": task_support(t.name)}} for t in page.items]
            )

        tools: orjson.Fragment = ENCODED_LISTS.get(page, rev.rank + _WITH_TASK_SUPPORT, encode)
    else:
        tools = _encoded(page, rev, tool)
    out: JsonObject = {"tools": tools}
    if page.next_cursor is not None:
        out["nextCursor"] = page.next_cursor
    return out


def call_tool_result(result: CallToolResult, rev: Revision) -> JsonObject:
    content = content_blocks(result.content, rev)
    out: JsonObject = {"content": content, "isError": result.is_error}
    structured = result.structured_content
    if isinstance(structured, RawJson):
        _raw_structured(structured, out, content, rev)
    elif structured is not NO_VALUE:
        if rev.any_structured_content:
            out["structuredContent"] = structured
        elif rev.structured_output:
            out["structuredContent"] = structured if isinstance(structured, dict) else {"result": structured}
        if not content:
            # Clients without structured output still need the data; newer ones get it twice by spec.
            content.append({"type": "text", "text": orjson.dumps(structured).decode()})
    if result.meta:
        out["_meta"] = dict(result.meta)
    return out


def _raw_structured(raw: RawJson, out: JsonObject, content: list[JsonObject], rev: Revision) -> None:
    """Structured content already serialized, shaped as the parsed value would be, without parsing it: the
    response embeds its bytes (`orjson.Fragment`), and a value other than an object is wrapped by concatenation."""
    if rev.any_structured_content:
        out["structuredContent"] = orjson.Fragment(raw.data)
    elif rev.structured_output:
        out["structuredContent"] = orjson.Fragment(raw.data if raw.is_object else b'{"result":' + raw.data + b"}")
    if not content:
        content.append({"type": "text", "text": raw.data.decode()})


# --- prompts ---------------------------------------------------------------------------------


@_memoised
def prompt(item: Prompt, rev: Revision) -> JsonObject:
    out: JsonObject = {"name": item.name}
    _title(item.title, out, rev)
    if item.description is not None:
        out["description"] = item.description
    if item.arguments:
        arguments = []
        for arg in item.arguments:
            wire: JsonObject = {"name": arg.name}
            _title(arg.title, wire, rev)
            if arg.description is not None:
                wire["description"] = arg.description
            wire["required"] = arg.required
            arguments.append(wire)
        out["arguments"] = arguments
    _icons(item.icons, out, rev)
    _meta(item.meta, out, rev)
    return out


def prompts_page(page: Page[Prompt], rev: Revision) -> JsonObject:
    out: JsonObject = {"prompts": _encoded(page, rev, prompt)}
    if page.next_cursor is not None:
        out["nextCursor"] = page.next_cursor
    return out


def get_prompt_result(result: GetPromptResult, rev: Revision) -> JsonObject:
    messages = [{"role": m.role, "content": content_block(m.content, rev, i)} for i, m in enumerate(result.messages)]
    out: JsonObject = {"messages": messages}
    if result.description is not None:
        out["description"] = result.description
    if result.meta:
        out["_meta"] = dict(result.meta)
    return out


# --- resources -------------------------------------------------------------------------------


@_memoised
def resource(item: Resource, rev: Revision) -> JsonObject:
    out: JsonObject = {"uri": item.uri, "name": item.name}
    _title(item.title, out, rev)
    if item.description is not None:
        out["description"] = item.description
    if item.mime_type is not None:
        out["mimeType"] = item.mime_type
    if item.size is not None:
        out["size"] = item.size
    _annotations(item.annotations, out, rev)
    _icons(item.icons, out, rev)
    _meta(item.meta, out, rev)
    return out


@_memoised
def resource_template(item: ResourceTemplate, rev: Revision) -> JsonObject:
    out: JsonObject = {"uriTemplate": item.uri_template, "name": item.name}
    _title(item.title, out, rev)
    if item.description is not None:
        out["description"] = item.description
    if item.mime_type is not None:
        out["mimeType"] = item.mime_type
    _annotations(item.annotations, out, rev)
    _icons(item.icons, out, rev)
    _meta(item.meta, out, rev)
    return out


def resources_page(page: Page[Resource], rev: Revision) -> JsonObject:
    out: JsonObject = {"resources": _encoded(page, rev, resource)}
    if page.next_cursor is not None:
        out["nextCursor"] = page.next_cursor
    return out


def resource_templates_page(page: Page[ResourceTemplate], rev: Revision) -> JsonObject:
    out: JsonObject = {"resourceTemplates": _encoded(page, rev, resource_template)}
    if page.next_cursor is not None:
        out["nextCursor"] = page.next_cursor
    return out


def read_resource_result(result: ReadResourceResult, rev: Revision) -> JsonObject:
    out: JsonObject = {"contents": [resource_contents(c, rev) for c in result.contents]}
    if result.meta:
        out["_meta"] = dict(result.meta)
    return out


def completion(result: Completion) -> JsonObject:
    values = list(result.values[:100])  # every revision caps completion values at 100
    wire: JsonObject = {"values": values}
    if result.total is not None:
        wire["total"] = result.total
    has_more = result.has_more if result.has_more is not None else (len(result.values) > 100 or None)
    if has_more is not None:
        wire["hasMore"] = has_more
    return {"completion": wire}


# --- requests to the client ------------------------------------------------------------------


def input_request_params(request: InputRequest, rev: Revision) -> JsonObject:
    """The params of a server-to-client request (or embedded input request) as `rev` defines them."""
    params = dict(request.params)
    if request.method == "elicitation/create":
        mode = params.get("mode", "form")
        if mode == "form" and not rev.url_elicitation:
            params.pop("mode", None)  # 2025-06-18 elicitation has no mode
        if mode == "url" and rev.era is Era.STATELESS:
            params.pop("elicitationId", None)  # 2026-07-28 correlates through requestState instead
    return params


# --- errors ----------------------------------------------------------------------------------


def error(err: McpError, rev: Revision | None) -> tuple[int, str, Any]:
    """The (code, message, data) `rev` defines for an error; None means no revision was agreed."""
    if rev is None:
        return err.code, err.message, err.data
    if isinstance(err, ResourceNotFound):
        return rev.resource_not_found_code, err.message, err.data
    if isinstance(err, MissingClientCapability) and rev.era is Era.SESSION:
        # -32021 is a 2026-07-28 code; session revisions call this an invalid request.
        return INVALID_REQUEST, err.message, err.data
    if err.code == MISSING_REQUIRED_CLIENT_CAPABILITY and rev.era is Era.SESSION:
        return INVALID_REQUEST, err.message, err.data
    if isinstance(err, UrlElicitationRequired) and rev is not V2025_11_25:
        links = "; ".join(f"{e.get('message', '')} {e.get('url', '')}".strip() for e in err.elicitations)
        return INVALID_REQUEST, f"{err.message} {links}".strip(), None
    return err.code, err.message, err.data
