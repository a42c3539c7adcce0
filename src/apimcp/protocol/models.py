"""The neutral result model handlers return; dialects.py shapes it per revision.

Every type here is immutable and carries the newest form of each field. A
handler builds a result once; the engine decides what each negotiated revision
may see (no audio before 2025-03-26, no structuredContent before 2025-06-18,
and so on). Instances compare by identity so shaped forms can be memoised.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar, dataclass_transform

Role = Literal["user", "assistant"]
CacheScope = Literal["public", "private"]
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip

_C = TypeVar("_C", bound=type)


@dataclass_transform(frozen_default=True, kw_only_default=True, eq_default=False)
def _model(cls: _C) -> _C:
    return dataclass(frozen=True, slots=True, kw_only=True, eq=False, weakref_slot=True)(cls)  # type: ignore[return-value]


@_model
class Icon:
    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] = ()
    theme: Literal["light", "dark"] | None = None


@_model
class Implementation:
    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: tuple[Icon, ...] = ()


@_model
class Annotations:
    """Hints about a content block or resource for the client."""

    audience: tuple[Role, ...] | None = None
    priority: float | None = None
    last_modified: str | None = None


# --- content -------------------------------------------------------------------------------


@_model
class TextContent:
    text: str
    annotations: Annotations | None = None
    meta: Mapping[str, Any] | None = None


@_model
class ImageContent:
    data: str
    """Base64-encoded bytes."""
    mime_type: str
    annotations: Annotations | None = None
    meta: Mapping[str, Any] | None = None


@_model
class AudioContent:
    data: str
    """Base64-encoded bytes."""
    mime_type: str
    annotations: Annotations | None = None
    meta: Mapping[str, Any] | None = None


@_model
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | None = None
    meta: Mapping[str, Any] | None = None


@_model
class BlobResourceContents:
    uri: str
    blob: str
    """Base64-encoded bytes."""
    mime_type: str | None = None
    meta: Mapping[str, Any] | None = None


ResourceContents = TextResourceContents | BlobResourceContents


@_model
class EmbeddedResource:
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: Mapping[str, Any] | None = None


@_model
class ResourceLink:
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None


ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink


class _NoValue:
    """Marks an absent structuredContent (JSON null is a value in 2026-07-28)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()

_OBJECT_START: Final = re.compile(rb"[ \t\r\n]*\{")


@_model
class RawJson:
    """A JSON value already serialized: well-formed UTF-8 JSON, compact where byte-for-byte answers matter.

    Whoever makes one has checked it (the engine writes `data` into responses as it is, unparsed), so large
    results travel from where they were checked to the wire without their object tree ever being built on the
    event loop. A `CallToolResult.structured_content` may be one.
    """

    data: bytes

    @property
    def is_object(self) -> bool:
        """Whether the value is a JSON object (its first non-blank byte opens one)."""
        return _OBJECT_START.match(self.data) is not None


# --- tools ---------------------------------------------------------------------------------


@_model
class ToolAnnotations:
    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@_model
class Tool:
    name: str
    input_schema: Mapping[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None


@_model
class CallToolResult:
    content: Sequence[ContentBlock] = ()
    structured_content: Any = NO_VALUE
    """A JSON value, a `RawJson`, or NO_VALUE."""
    is_error: bool = False
    meta: Mapping[str, Any] | None = None


# --- prompts -------------------------------------------------------------------------------


@_model
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False
    title: str | None = None


@_model
class Prompt:
    name: str
    description: str | None = None
    title: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None


@_model
class PromptMessage:
    role: Role
    content: ContentBlock


@_model
class GetPromptResult:
    messages: Sequence[PromptMessage]
    description: str | None = None
    meta: Mapping[str, Any] | None = None


# --- resources -----------------------------------------------------------------------------


@_model
class Resource:
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None


@_model
class ResourceTemplate:
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: tuple[Icon, ...] = ()
    meta: Mapping[str, Any] | None = None


@_model
class ReadResourceResult:
    contents: Sequence[ResourceContents]
    meta: Mapping[str, Any] | None = None


# --- lists, completion, caching ------------------------------------------------------------

T = TypeVar("T")


@_model
class Page(Generic[T]):
    """One page of a list result; `next_cursor` is None on the last page."""

    items: Sequence[T]
    next_cursor: str | None = None


@_model
class PromptRef:
    name: str


@_model
class ResourceTemplateRef:
    uri: str


CompletionRef = PromptRef | ResourceTemplateRef


@_model
class Completion:
    values: Sequence[str] = ()
    total: int | None = None
    has_more: bool | None = None


MAX_CACHE_TTL_MS: Final = 365 * 24 * 3600 * 1000
"""A cache hint's lifetime, at most (a year): what plans and configuration files may set."""


@_model
class CacheHint:
    """How long a 2026-07-28 client may reuse a cacheable result, and with whom."""

    ttl_ms: int = 0
    scope: CacheScope = "private"

    def __post_init__(self) -> None:
        if self.ttl_ms < 0:
            raise ValueError("ttl_ms must be zero or positive")


@_model
class ServerFeatures:
    """Which server capabilities a handler offers; unlisted methods answer -32601."""

    tools: bool = True
    tools_list_changed: bool = False
    prompts: bool = False
    prompts_list_changed: bool = False
    resources: bool = False
    resources_subscribe: bool = False
    resources_list_changed: bool = False
    logging: bool = True
    completions: bool = False
    tasks: bool = False
    """Tool calls may run as tasks (2025-11-25 experimental tasks, the 2026-07-28 tasks extension); which
    tools, and when, `McpHandler.task_policy` says."""
    experimental: Mapping[str, Any] = field(default_factory=dict)


# --- requests a server sends to the client (session era) or embeds in input_required -------


@_model
class InputRequest:
    """A request for client input: elicitation/create, sampling/createMessage or roots/list.

    `params` is in the newest wire form; dialects down-level it per revision.
    """

    method: Literal["elicitation/create", "sampling/createMessage", "roots/list"]
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def capability(self) -> str:
        """The client capability this request needs."""
        return _CAPABILITY_OF[self.method]


_CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}


def elicitation_form(message: str, requested_schema: Mapping[str, Any]) -> InputRequest:
    """Ask the user to fill a flat form described by a restricted JSON Schema."""
    return InputRequest(
        method="elicitation/create",
        params={"mode": "form", "message": message, "requestedSchema": dict(requested_schema)},
    )


def elicitation_url(message: str, url: str, elicitation_id: str) -> InputRequest:
    """Send the user to a URL (for secrets and consent that must not pass through the client)."""
    return InputRequest(
        method="elicitation/create",
        params={"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id},
    )


def sampling_request(messages: Sequence[Mapping[str, Any]], max_tokens: int, **extra: Any) -> InputRequest:
    """Ask the client's model for a completion; `extra` holds optional wire params."""
    return InputRequest(
        method="sampling/createMessage",
        params={"messages": [dict(m) for m in messages], "maxTokens": max_tokens, **extra},
    )


def roots_request() -> InputRequest:
    return InputRequest(method="roots/list", params={})
