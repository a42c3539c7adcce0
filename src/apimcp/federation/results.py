"""An upstream MCP server's `tools/call` result, checked, as the gateway's own result model.

The result comes from a server the gateway does not control: each content block is read by its type and its
fields' types (text, image, audio, an embedded resource, a resource link); a block of another type is told as
a line of text rather than passed on unread, and at most `MAX_BLOCKS` are kept. The dialects then shape it for
each client's revision, as they shape every other tool's result (audio, links and structured content for the
revisions that have them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.protocol.models import (
    NO_VALUE,
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

MAX_BLOCKS = 1_000


class BadResult(ValueError):
    """A result that is not a `CallToolResult`."""


def call_result(raw: Mapping[str, Any]) -> CallToolResult:
    content = raw.get("content", [])
    if not isinstance(content, list):
        raise BadResult("its content is not a list")
    blocks = tuple(block(item) for item in content[:MAX_BLOCKS])
    if len(content) > MAX_BLOCKS:
        blocks += (TextContent(text=f"({len(content) - MAX_BLOCKS} more content blocks were left out)"),)
    structured = raw.get("structuredContent", NO_VALUE)
    if structured is not NO_VALUE and not isinstance(structured, dict):
        structured = NO_VALUE  # structured content is an object; anything else is not passed on as one
    return CallToolResult(content=blocks, structured_content=structured, is_error=raw.get("isError") is True)


def block(item: object) -> ContentBlock:
    if not isinstance(item, Mapping):
        return TextContent(text="(a content block that is not an object was left out)")
    kind = item.get("type")
    annotations = _annotations(item.get("annotations"))
    if kind == "text" and isinstance(item.get("text"), str):
        return TextContent(text=item["text"], annotations=annotations)
    if kind in ("image", "audio") and _strings(item, "data", "mimeType"):
        model = ImageContent if kind == "image" else AudioContent
        return model(data=item["data"], mime_type=item["mimeType"], annotations=annotations)
    if kind == "resource":
        embedded = contents(item.get("resource"))
        if embedded is not None:
            return EmbeddedResource(resource=embedded, annotations=annotations)
    if kind == "resource_link" and _strings(item, "uri", "name"):
        return ResourceLink(
            uri=item["uri"],
            name=item["name"],
            title=_optional(item.get("title")),
            description=_optional(item.get("description")),
            mime_type=_optional(item.get("mimeType")),
            size=item["size"] if type(item.get("size")) is int else None,
            annotations=annotations,
        )
    shown = kind[:40] if isinstance(kind, str) else "unknown"
    return TextContent(text=f"(a content block of type {shown!r} that apimcp does not read was left out)")


def contents(raw: object) -> ResourceContents | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("uri"), str):
        return None
    mime_type = _optional(raw.get("mimeType"))
    if isinstance(raw.get("text"), str):
        return TextResourceContents(uri=raw["uri"], text=raw["text"], mime_type=mime_type)
    if isinstance(raw.get("blob"), str):
        return BlobResourceContents(uri=raw["uri"], blob=raw["blob"], mime_type=mime_type)
    return None


def _annotations(raw: object) -> Annotations | None:
    if not isinstance(raw, Mapping):
        return None
    audience = raw.get("audience")
    roles = tuple(r for r in audience if r in ("user", "assistant")) if isinstance(audience, list) else None
    priority = raw.get("priority")
    return Annotations(
        audience=roles or None,
        priority=float(priority) if isinstance(priority, int | float) and not isinstance(priority, bool) else None,
        last_modified=_optional(raw.get("lastModified")),
    )


def _strings(item: Mapping[str, Any], *keys: str) -> bool:
    return all(isinstance(item.get(key), str) for key in keys)


def _optional(value: object) -> str | None:
    return value if isinstance(value, str) else None
