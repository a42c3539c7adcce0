"""An MCP server's prompts, resources and templates as the gateway serves them, and its answers to reading them.

What was listed at import was checked then (`definitions.py`): here it only becomes the engine's models. What the
server answers to `prompts/get` and `resources/read` comes from a server the gateway does not control: messages
and contents are read by their fields' types, at most `MAX_ITEMS` of them, as tool results are (`results.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimcp.federation.results import MAX_BLOCKS, BadResult, block, contents
from apimcp.protocol.models import (
    GetPromptResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
)

MAX_ITEMS = MAX_BLOCKS


def prompt_of(raw: Mapping[str, Any]) -> Prompt:
    return Prompt(
        name=raw["name"],
        title=raw.get("title"),
        description=raw.get("description"),
        arguments=tuple(
            PromptArgument(
                name=a["name"], title=a.get("title"), description=a.get("description"), required=a["required"]
            )
            for a in raw["arguments"]
        ),
    )


def resource_of(raw: Mapping[str, Any]) -> Resource:
    return Resource(
        uri=raw["uri"],
        name=raw["name"],
        title=raw.get("title"),
        description=raw.get("description"),
        mime_type=raw.get("mimeType"),
        size=raw.get("size"),
    )


def template_of(raw: Mapping[str, Any]) -> ResourceTemplate:
    return ResourceTemplate(
        uri_template=raw["uriTemplate"],
        name=raw["name"],
        title=raw.get("title"),
        description=raw.get("description"),
        mime_type=raw.get("mimeType"),
    )


def prompt_result(raw: Mapping[str, Any]) -> GetPromptResult:
    """A server's `prompts/get` result; `BadResult` when it is not one."""
    messages = raw.get("messages")
    if not isinstance(messages, list):
        raise BadResult("its messages are not a list")
    read = []
    for message in messages[:MAX_ITEMS]:
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            raise BadResult("a message is not an object with the role user or assistant")
        read.append(PromptMessage(role=message["role"], content=block(message.get("content"))))
    description = raw.get("description")
    return GetPromptResult(messages=tuple(read), description=description if isinstance(description, str) else None)


def read_result(raw: Mapping[str, Any]) -> ReadResourceResult:
    """A server's `resources/read` result; `BadResult` when it is not one."""
    items = raw.get("contents")
    if not isinstance(items, list):
        raise BadResult("its contents are not a list")
    read: list[ResourceContents] = []
    for item in items[:MAX_ITEMS]:
        found = contents(item)
        if found is None:
            raise BadResult("a content has no uri, or neither text nor blob")
        read.append(found)
    return ReadResourceResult(contents=tuple(read))
