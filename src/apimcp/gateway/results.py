"""Neutral backend results to MCP tool results."""

from __future__ import annotations

import base64

from apimcp.backends.base import BackendResult, BinaryBody, EmptyBody, Failure, JsonBody, TextBody
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
)


def error_result(message: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=message),), is_error=True)


def tool_result(result: BackendResult, output: ArgumentValidator | None = None) -> CallToolResult:
    """The MCP result of a backend call; `output` checks JSON against the tool's output schema."""
    if isinstance(result, JsonBody):
        if output is not None:
            problems = output.problems(result.value)
            if problems:
                return error_result(
                    "The backend answered, but not as its API description says ("
                    + "; ".join(problems)
                    + f"). Its answer: {result.text}"
                )
        notes = tuple(TextContent(text=note) for note in result.notes)
        return CallToolResult(content=(TextContent(text=result.text), *notes), structured_content=result.value)
    if isinstance(result, TextBody):
        return CallToolResult(content=(TextContent(text=result.text),))
    if isinstance(result, BinaryBody):
        data = base64.b64encode(result.data).decode("ascii")
        if result.media_type.startswith("image/"):
            return CallToolResult(content=(ImageContent(data=data, mime_type=result.media_type),))
        if result.media_type.startswith("audio/"):
            return CallToolResult(content=(AudioContent(data=data, mime_type=result.media_type),))
        blob = BlobResourceContents(uri=result.uri, blob=data, mime_type=result.media_type)
        return CallToolResult(content=(EmbeddedResource(resource=blob),))
    if isinstance(result, EmptyBody):
        return CallToolResult(content=(TextContent(text=f"Done (HTTP {result.status}, no content)."),))
    assert isinstance(result, Failure)
    return error_result(result.message)
