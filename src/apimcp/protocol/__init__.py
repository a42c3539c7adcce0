"""The MCP wire engine: every revision from 2024-11-05 to 2026-07-28, in both eras.

It knows nothing of APIs. Implement `McpHandler`, wrap it in `McpEndpoint`,
and serve the endpoint with any ASGI server.
"""

from apimcp.protocol.caller import CALLER_KEY, Caller, RequestSource
from apimcp.protocol.context import ChangeNotifier, InputRequired, RequestContext
from apimcp.protocol.dispatch import ToolError
from apimcp.protocol.endpoint import McpEndpoint
from apimcp.protocol.errors import (
    HttpRefusal,
    McpError,
    MissingClientCapability,
    ResourceNotFound,
    UrlElicitationRequired,
    invalid_params,
    method_not_found,
)
from apimcp.protocol.event_store import EventStore, MemoryEventStore
from apimcp.protocol.handler import McpHandler
from apimcp.protocol.models import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    Implementation,
    InputRequest,
    Page,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptRef,
    RawJson,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    ResourceTemplateRef,
    ServerFeatures,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from apimcp.protocol.options import EndpointOptions
from apimcp.protocol.relay import NO_RELAY, MemoryRelay, SessionRelay
from apimcp.protocol.request_state import RequestStateSealer
from apimcp.protocol.security import TransportSecurity
from apimcp.protocol.sessions import MemorySessionStore, Session, SessionLimits, SessionStore
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.tasks.store import MemoryTaskStore, TaskStore

__all__ = [
    "CALLER_KEY",
    "NO_RELAY",
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CacheHint",
    "CallToolResult",
    "Caller",
    "ChangeNotifier",
    "Completion",
    "CompletionRef",
    "ContentBlock",
    "EmbeddedResource",
    "EndpointOptions",
    "EventStore",
    "GetPromptResult",
    "HttpRefusal",
    "Icon",
    "ImageContent",
    "Implementation",
    "InputRequest",
    "InputRequired",
    "McpEndpoint",
    "McpError",
    "McpHandler",
    "MemoryEventStore",
    "MemoryRelay",
    "MemorySessionStore",
    "MemoryTaskStore",
    "MissingClientCapability",
    "Page",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptRef",
    "RawJson",
    "ReadResourceResult",
    "RequestContext",
    "RequestSource",
    "RequestStateSealer",
    "Resource",
    "ResourceLink",
    "ResourceNotFound",
    "ResourceTemplate",
    "ResourceTemplateRef",
    "ServerFeatures",
    "Session",
    "SessionLimits",
    "SessionRelay",
    "SessionStore",
    "TaskPolicy",
    "TaskStore",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "ToolError",
    "TransportSecurity",
    "UrlElicitationRequired",
    "invalid_params",
    "method_not_found",
]
