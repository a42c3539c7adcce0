"""Neutral backend results to MCP tool results."""

from __future__ import annotations

import base64
from collections.abc import Sequence

from apimcp.backends.base import BinaryBody, EmptyBody, Failure, JsonBody, TextBody, ToolAnswer
from apimcp.gateway.validation import ArgumentValidator
from apimcp.protocol import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    TextContent,
)
from apimcp.protocol.models import NO_VALUE


def error_result(message: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=message),), is_error=True)


ReadResult = JsonBody | TextBody | BinaryBody | EmptyBody | Failure | ToolAnswer
"""A backend's answer as read on the event loop (an `UnparsedJson` goes to `large_answers` instead)."""


def tool_result(result: ReadResult, output: ArgumentValidator | None = None) -> CallToolResult:
    """The MCP result of a backend call; `output` checks JSON against the tool's output schema.

    A tool with an output schema promises structured content on every success, and clients refuse a
    success without it. When its backend answers a success that is not JSON (no content, text,
    bytes), that breaks the description's promise just as JSON of the wrong shape does, and is told
    the same way: an error result naming the status, with what the backend sent after it.
    """
    if isinstance(result, ToolAnswer):
        return upstream_result(result, output)
    if output is not None and not isinstance(result, JsonBody | Failure):
        plain = _plain_result(result)
        return CallToolResult(content=(TextContent(text=_not_json(result)), *plain.content), is_error=True)
    if isinstance(result, JsonBody):
        return json_result(result, output.problems(result.value, quoting=False) if output is not None else ())
    if isinstance(result, Failure):
        return error_result(result.message)
    return _plain_result(result)


def upstream_result(answer: ToolAnswer, output: ArgumentValidator | None) -> CallToolResult:
    """An upstream MCP tool's result, passed on; a success is held to the output schema the tool was imported
    with, as any tool's is (an upstream that changed its answers without changing its definition is told)."""
    result = answer.result
    if output is None or result.is_error:
        return result
    structured = result.structured_content
    if structured is NO_VALUE:
        return error_result("The MCP server's tool answered without the structured content its output schema promises")
    problems = output.problems(structured, quoting=False)
    if problems:
        return error_result(
            "The MCP server's tool answered, but not as its output schema says (" + "; ".join(problems) + ")"
        )
    return result


def json_result(result: JsonBody, problems: Sequence[str]) -> CallToolResult:
    """A JSON answer's result, given the problems its check against the output schema found (none: it passed)."""
    if problems:
        return error_result(
            "The backend answered, but not as its API description says (" + "; ".join(problems) + f"). Its answer: "
            f"{result.text}"
        )
    notes = tuple(TextContent(text=note) for note in result.notes)
    return CallToolResult(content=(TextContent(text=result.text), *notes), structured_content=result.value)


def _not_json(result: TextBody | BinaryBody | EmptyBody) -> str:
    sent = "no content" if isinstance(result, EmptyBody) else f"{result.media_type} content"
    if isinstance(result, TextBody) and result.unread:
        sent += f" that cannot be read ({result.unread})"
    return (
        f"The call succeeded (HTTP {result.status}), but the backend answered with {sent}, not the JSON object "
        "its API description promises for this tool (its output schema)."
    )


def _plain_result(result: TextBody | BinaryBody | EmptyBody) -> CallToolResult:
    """A success that is not JSON: text, an image, audio, an embedded blob, or a line saying it is done."""
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
    return CallToolResult(content=(TextContent(text=f"Done (HTTP {result.status}, no content)."),))
