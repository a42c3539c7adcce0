"""A plan's guardrails scan what resources and prompts give a client, as they scan tools' answers.

A resource read (`resources/read`: inline, from the backend, from a remote URL or from an MCP server the exposition
fronts) and a prompt (`prompts/get`: an artifact's, with the client's arguments in it, or an MCP server's) reach the
model as a tool's answer does, so every guardrail whose `on` holds `answers` sees them: the read's contents as
embedded resources, the prompt's messages as content blocks, in a `CallToolResult`; the call they are told of is
`resources/read` (a URI is the client's to choose, and may hold what a guardrail blocks: its message must not
repeat it) or the prompt's name. What they find is told to the observers with the URI or the name, as
`in: resource` or `in: prompt`; a redaction is served; a block refuses the request with the guardrail's message
(-32603).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Final

from apimcp.artifacts.resources import ResourceUnavailable
from apimcp.gateway.calls import CallPath
from apimcp.guardrails.chain import After
from apimcp.guardrails.hooks import GuardedCall
from apimcp.guardrails.scanning import texts_of
from apimcp.protocol import CallToolResult, RequestContext
from apimcp.protocol.errors import INTERNAL_ERROR, McpError
from apimcp.protocol.models import EmbeddedResource, GetPromptResult, ReadResourceResult

OFF_THE_LOOP_FROM: Final = 256 * 1024
"""Characters of text from which the scan runs in a worker thread, as a large tool answer's does."""


async def guarded_read(calls: CallPath, ctx: RequestContext, uri: str, read: ReadResourceResult) -> ReadResourceResult:
    answer = CallToolResult(content=tuple(EmbeddedResource(resource=contents) for contents in read.contents))
    after = await _after(calls, ctx, uri, "resources/read", "resource", answer)
    if after.block is not None:
        raise ResourceUnavailable(after.block)
    if after.result is answer:
        return read
    contents = [block.resource for block in after.result.content if isinstance(block, EmbeddedResource)]
    if len(contents) != len(after.result.content):
        raise ResourceUnavailable("a guardrail answered something other than a resource's contents")
    return replace(read, contents=tuple(contents))


async def guarded_prompt(calls: CallPath, ctx: RequestContext, name: str, got: GetPromptResult) -> GetPromptResult:
    answer = CallToolResult(content=tuple(message.content for message in got.messages))
    after = await _after(calls, ctx, name, name, "prompt", answer)
    if after.block is not None:
        raise McpError(INTERNAL_ERROR, after.block)
    if after.result is answer:
        return got
    blocks = after.result.content
    if len(blocks) != len(got.messages):
        raise McpError(INTERNAL_ERROR, f"A guardrail changed the number of the prompt {name}'s messages")
    messages = zip(got.messages, blocks, strict=True)
    return replace(got, messages=tuple(replace(message, content=block) for message, block in messages))


async def _after(
    calls: CallPath, ctx: RequestContext, subject: str, called: str, place: str, answer: CallToolResult
) -> After:
    """The guardrails' verdict on `answer` of `subject` (the URI or the prompt's name the observers hear), asked
    as an answer of `called`."""
    source = ctx.source
    guarded = GuardedCall(called, calls.name, {}, source.caller)
    if _size(answer) >= OFF_THE_LOOP_FROM:
        after = await asyncio.to_thread(calls.guardrails.after, guarded, answer, place)
    else:
        after = calls.guardrails.after(guarded, answer, place)
    if after.heard:
        calls.heard(calls.guardrails.named(subject), source, after.heard)
    return after


def _size(answer: CallToolResult) -> int:
    """Characters of what the guardrails read of `answer` (`scanning.texts_of`)."""
    return sum(len(text) for block in answer.content for text in texts_of(block))
