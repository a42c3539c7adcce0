"""The "everything server" the official MCP conformance suite drives, built on the engine.

The suite (`npx conformance server --url ...`) calls tools, prompts and
resources by fixed names and checks their exact output; the normative list is
the TypeScript everything-server and the scenario sources of
modelcontextprotocol/conformance. One handler serves both eras with the same
code: tools that need client input call `ctx.sample` / `ctx.elicit`, which the
engine turns into a server-to-client request in a session and into an
`input_required` result in 2026-07-28.

Like the reference server, the 2026-07-28 diagnostics (the
`test_input_required_result_*` tools and prompt, `test_missing_capability`,
the list-change triggers...) are offered to 2026-07-28 clients only.

Run it with `python -m tests.conformance.fixture_server --port 3101` from the
repository root and point the suite at http://localhost:3101/mcp.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import uvicorn

from apimcp.protocol import (
    AudioContent,
    BlobResourceContents,
    CacheHint,
    CallToolResult,
    Completion,
    CompletionRef,
    EmbeddedResource,
    EndpointOptions,
    GetPromptResult,
    ImageContent,
    Implementation,
    InputRequest,
    McpEndpoint,
    McpHandler,
    MissingClientCapability,
    Page,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    RequestContext,
    Resource,
    ResourceNotFound,
    ResourceTemplate,
    ServerFeatures,
    TextContent,
    TextResourceContents,
    Tool,
    ToolError,
    invalid_params,
)
from apimcp.protocol.errors import INTERNAL_ERROR, McpError
from apimcp.protocol.models import elicitation_form, roots_request, sampling_request
from apimcp.protocol.tasks.policy import TaskPolicy
from apimcp.protocol.versions import Era

# --- fixed payloads ----------------------------------------------------------------------------

PNG_1X1_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
"""A 1x1 red PNG pixel."""
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
"""A minimal (silent) WAV file."""

NO_ARGUMENTS: Mapping[str, Any] = {"type": "object", "properties": {}}

JSON_SCHEMA_2020_12: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
"""SEP-1613 / SEP-2106: served verbatim so the suite can check no keyword is stripped."""


def _all_required(**properties: Mapping[str, Any]) -> dict[str, Any]:
    """An object schema (tool input or flat elicitation form) whose properties are all required."""
    return {"type": "object", "properties": properties, "required": list(properties)}


NAME_FORM = _all_required(name={"type": "string"})
CONFIRM_FORM = _all_required(ok={"type": "boolean"})


def _compact_json(value: object) -> str:
    """JSON as JavaScript's JSON.stringify writes it (the suite compares such strings)."""
    return json.dumps(value, separators=(",", ":"))


def _text(text: str) -> CallToolResult:
    return CallToolResult(content=(TextContent(text=text),))


def _form_field(answer: Mapping[str, Any], name: str) -> str:
    """A string field of an accepted elicitation (ElicitResult.content), or "unknown"."""
    content = answer.get("content")
    value = content.get(name) if isinstance(content, dict) else None
    return value if isinstance(value, str) else "unknown"


def _sampled_text(result: Mapping[str, Any]) -> str | None:
    """The text of a CreateMessageResult (its content is one block, or a list since 2025-11-25)."""
    content = result.get("content")
    if isinstance(content, list):
        content = next((c for c in content if isinstance(c, dict) and c.get("type") == "text"), None)
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else None


# --- the tool registry -------------------------------------------------------------------------

ToolFunction = Callable[[RequestContext, Mapping[str, Any]], Awaitable[CallToolResult]]


@dataclass(frozen=True, slots=True)
class FixtureTool:
    definition: Tool
    run: ToolFunction
    modern_only: bool
    """Offered to 2026-07-28 clients only, as in the reference server."""
    tasks: TaskPolicy | None = None
    """Whether (and when) calls become tasks, for clients that negotiated them."""


TOOLS: dict[str, FixtureTool] = {}


def tool(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] = NO_ARGUMENTS,
    *,
    modern_only: bool = False,
    tasks: TaskPolicy | None = None,
) -> Callable[[ToolFunction], ToolFunction]:
    """Register the decorated function as the tool `name`."""

    def register(run: ToolFunction) -> ToolFunction:
        definition = Tool(name=name, description=description, input_schema=input_schema)
        TOOLS[name] = FixtureTool(definition, run, modern_only, tasks)
        return run

    return register


# --- tools: content of every type --------------------------------------------------------------


@tool("test_simple_text", "Tests simple text content response")
async def simple_text(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return _text("This is a simple text response for testing.")


@tool("test_image_content", "Tests image content response")
async def image_content(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return CallToolResult(content=(ImageContent(data=PNG_1X1_BASE64, mime_type="image/png"),))


@tool("test_audio_content", "Tests audio content response")
async def audio_content(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return CallToolResult(content=(AudioContent(data=WAV_BASE64, mime_type="audio/wav"),))


@tool("test_embedded_resource", "Tests embedded resource content response")
async def embedded_resource(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    resource = TextResourceContents(
        uri="test://embedded-resource", text="This is an embedded resource content.", mime_type="text/plain"
    )
    return CallToolResult(content=(EmbeddedResource(resource=resource),))


@tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)")
async def multiple_content_types(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    resource = TextResourceContents(
        uri="test://mixed-content-resource",
        text=_compact_json({"test": "data", "value": 123}),
        mime_type="application/json",
    )
    return CallToolResult(
        content=(
            TextContent(text="Multiple content types test:"),
            ImageContent(data=PNG_1X1_BASE64, mime_type="image/png"),
            EmbeddedResource(resource=resource),
        )
    )


@tool("test_error_handling", "Tests error response handling")
async def error_handling(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    raise ToolError("This tool intentionally returns an error for testing")


@tool(
    "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    JSON_SCHEMA_2020_12,
)
async def json_schema_2020_12_tool(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return _text(f"JSON Schema 2020-12 tool called with: {_compact_json(dict(arguments))}")


# --- tools: notifications during a call --------------------------------------------------------


@tool("test_tool_with_logging", "Tests tool that emits log messages during execution")
async def tool_with_logging(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return _text("Tool with logging executed successfully")


@tool("test_tool_with_progress", "Tests tool that reports progress notifications")
async def tool_with_progress(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        await ctx.progress(step, 100, f"Completed step {step} of 100")
    return _text(str(ctx.progress_token if ctx.progress_token is not None else 0))


@tool("test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699)")
async def reconnection(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    # The reference closes the POST stream mid-call; a handler has no way to do that here,
    # so this answers at once (the not-scored server-sse-polling scenario reports it).
    await asyncio.sleep(0.1)
    return _text(
        "Reconnection test completed successfully. If you received this, "
        "the client properly reconnected after stream closure."
    )


# --- tools: asking the client (sampling, elicitation) in either era ----------------------------


@tool(
    "test_sampling",
    "Tests server-initiated sampling (LLM completion request)",
    _all_required(prompt={"type": "string", "description": "The prompt to send to the LLM"}),
)
async def sampling(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    prompt = arguments.get("prompt")
    if not isinstance(prompt, str):
        raise invalid_params('"arguments.prompt" must be a string', {"field": "arguments.prompt"})
    result = await ctx.sample([{"role": "user", "content": {"type": "text", "text": prompt}}], 100)
    return _text(f"LLM response: {_sampled_text(result) or 'No response'}")


@tool(
    "test_elicitation",
    "Tests server-initiated elicitation (user input request)",
    _all_required(message={"type": "string", "description": "The message to show the user"}),
)
async def elicitation(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    message = arguments.get("message")
    if not isinstance(message, str):
        raise invalid_params('"arguments.message" must be a string', {"field": "arguments.message"})
    answer = await ctx.elicit(message, _all_required(response={"type": "string", "description": "User's response"}))
    return _text(f"User response: action={answer.get('action')}, content={_compact_json(answer.get('content') or {})}")


SEP1034_DEFAULTS_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}

SEP1330_ENUMS_FORM = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def _elicitation_completed(answer: Mapping[str, Any]) -> CallToolResult:
    return _text(
        f"Elicitation completed: action={answer.get('action')}, content={_compact_json(answer.get('content') or {})}"
    )


@tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034")
async def elicitation_sep1034_defaults(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    answer = await ctx.elicit("Please review and update the form fields with defaults", SEP1034_DEFAULTS_FORM)
    return _elicitation_completed(answer)


@tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330")
async def elicitation_sep1330_enums(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    answer = await ctx.elicit("Please select options from the enum fields", SEP1330_ENUMS_FORM)
    return _elicitation_completed(answer)


# --- tools: 2026-07-28 diagnostics (capabilities, streams, logging, list changes, headers) ------


@tool("test_missing_capability", "Test tool requiring sampling", modern_only=True)
async def missing_capability(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    if not ctx.has_client_capability("sampling"):
        raise MissingClientCapability({"sampling": {}})
    return _text("Success")


@tool("test_streaming_elicitation", "Diagnostic tool validating response progress streams", modern_only=True)
async def streaming_elicitation(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    # The request stream may carry notifications and, at the end, an input_required
    # result; never an independent elicitation/create request.
    await ctx.progress(50, 100)
    answer = await ctx.elicit(
        "Streaming elicitation: anything to add?", _all_required(note={"type": "string"}), key="note"
    )
    return _text(f"Streaming complete: {_form_field(answer, 'note')}")


@tool("test_logging_tool", "Diagnostic logging validator tool", modern_only=True)
async def logging_tool(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    # Reaches the client only when the request named a logLevel in its _meta.
    await ctx.log("info", "Diagnostic trace logging activated")
    return _text("Logging evaluated")


@tool("test_trigger_tool_change", "Announces a tools/list change to open listen streams", modern_only=True)
async def trigger_tool_change(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    ctx.changes.tools_changed()
    return _text("Mutation triggered")


@tool("test_trigger_prompt_change", "Announces a prompts/list change to open listen streams", modern_only=True)
async def trigger_prompt_change(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    ctx.changes.prompts_changed()
    return _text("Mutation triggered")


@tool(
    "test_x_mcp_header",
    "Tool whose region argument is mirrored in the Mcp-Param-Region header (SEP-2243)",
    _all_required(region={"type": "string", "x-mcp-header": "Region"}),
    modern_only=True,
)
async def x_mcp_header(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return _text(f"Region: {arguments.get('region')}")


# --- tools: 2026-07-28 input_required (multi round-trip) ---------------------------------------
# Input keys are the ones the scenarios name; the engine seals requestState (HMAC) and
# carries answers and ctx.state from one round to the next.


@tool(
    "test_input_required_result_elicitation",
    "MRTR: returns InputRequiredResult with elicitation request",
    modern_only=True,
)
async def input_required_elicitation(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return _text(f"Hello, {_form_field(answer, 'name')}!")


@tool(
    "test_input_required_result_sampling", "MRTR: returns InputRequiredResult with sampling request", modern_only=True
)
async def input_required_sampling(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    question = {"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}
    result = await ctx.sample([question], 100, key="capital_question")
    return _text(f"Sampling result: {_sampled_text(result) or 'no response'}")


@tool(
    "test_input_required_result_list_roots",
    "MRTR: returns InputRequiredResult with roots/list request",
    modern_only=True,
)
async def input_required_list_roots(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    result = await ctx.list_roots(key="client_roots")
    roots = result.get("roots")
    return _text(f"Found {len(roots) if isinstance(roots, list) else 0} root(s)")


@tool(
    "test_input_required_result_request_state", "MRTR: returns InputRequiredResult with requestState", modern_only=True
)
async def input_required_request_state(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    state_came_back = ctx.state.get("kind") == "request-state"  # set by an earlier round only
    ctx.state["kind"] = "request-state"
    answer = await ctx.elicit("Please confirm", CONFIRM_FORM, key="confirm")
    content = answer.get("content")
    if not state_came_back:
        raise ToolError("The retry did not carry the requestState this server issued")
    if not (isinstance(content, dict) and content.get("ok") is True):
        raise ToolError("The user did not confirm")
    return _text("state-ok: requestState validated")


@tool(
    "test_input_required_result_multiple_inputs",
    "MRTR: returns InputRequiredResult with multiple input requests",
    modern_only=True,
)
async def input_required_multiple_inputs(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    ctx.state["kind"] = "multiple-inputs"
    greeting_prompt = {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}
    requests: dict[str, InputRequest] = {
        "user_name": elicitation_form("What is your name?", NAME_FORM),
        "greeting": sampling_request([greeting_prompt], 50),
        "client_roots": roots_request(),
    }
    answers = await ctx.request_inputs(requests)  # all three in one round
    roots = answers["client_roots"].get("roots")
    return _text(
        f"Name: {_form_field(answers['user_name'], 'name')}; "
        f"Greeting: {_sampled_text(answers['greeting']) or 'Hello there!'}; "
        f"Roots: {len(roots) if isinstance(roots, list) else 0}"
    )


@tool("test_input_required_result_multi_round", "MRTR: multi-round InputRequiredResult workflow", modern_only=True)
async def input_required_multi_round(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    first = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    ctx.state["name"] = _form_field(first, "name")
    second = await ctx.elicit(
        "Step 2: What is your favorite color?", _all_required(color={"type": "string"}), key="step2"
    )
    return _text(f"Multi-round complete for {ctx.state['name']} who likes {_form_field(second, 'color')}")


@tool("test_input_required_result_tampered_state", "MRTR: HMAC-signed requestState integrity test", modern_only=True)
async def input_required_tampered_state(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    # The engine refuses a requestState whose HMAC does not verify before this runs again.
    ctx.state["kind"] = "tamper-test"
    await ctx.elicit("Please confirm", CONFIRM_FORM, key="confirm")
    return _text("integrity-ok: state verified")


@tool(
    "test_input_required_result_capabilities", "MRTR: respects client capabilities in inputRequests", modern_only=True
)
async def input_required_capabilities(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    requests: dict[str, InputRequest] = {}
    if ctx.has_client_capability("elicitation"):
        requests["elicit_input"] = elicitation_form("Elicitation input", _all_required(value={"type": "string"}))
    if ctx.has_client_capability("sampling"):
        sample = {"role": "user", "content": {"type": "text", "text": "Sample request"}}
        requests["sample_input"] = sampling_request([sample], 50)
    if not requests:
        return _text("No supported capabilities declared")
    answers = await ctx.request_inputs(requests)
    return _text(f"capabilities-ok: received {','.join(answers)}")


# --- tools: tasks (the io.modelcontextprotocol/tasks scenarios; 2025-11-25 tasks too) -------------

QUICK_THEN_TASK = TaskPolicy("optional", 0.5)
"""Answered directly within half a second, a task after."""
TASK_ALWAYS = TaskPolicy("required", 0.0)
TASK_AFTER_INPUT = TaskPolicy("required", 0.5)
"""Required: asks for input (2026-07-28: one input_required round) before its task is made."""


@tool("greet", "Greets someone (never a task)", _all_required(name={"type": "string"}))
async def greet(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    return _text(f"Hello, {arguments.get('name', 'World')}!")


@tool(
    "slow_compute",
    "Sleeps `seconds` then answers; a task when it takes long",
    {"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}},
    tasks=QUICK_THEN_TASK,
)
async def slow_compute(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    seconds = arguments.get("seconds", 1)
    if not isinstance(seconds, int | float) or not 0 <= seconds <= 120:
        raise invalid_params('"seconds" must be a number from 0 to 120', {"field": "seconds"})
    await asyncio.sleep(seconds)
    return _text(f"Computed {arguments.get('label', 'result')} in {seconds}s")


@tool("failing_job", "Reports a tool error after about a second (always a task)", tasks=TaskPolicy("required", 0.5))
async def failing_job(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    await asyncio.sleep(1)
    raise ToolError("The job failed")


@tool("protocol_error_job", "Fails with a protocol error after about a second", tasks=TaskPolicy("required", 0.5))
async def protocol_error_job(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    await asyncio.sleep(1)
    raise McpError(INTERNAL_ERROR, "The job broke down")


@tool(
    "confirm_delete",
    "Asks the user to confirm the deletion of `filename` (always a task)",
    _all_required(filename={"type": "string"}),
    tasks=TASK_ALWAYS,
)
async def confirm_delete(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    filename = arguments.get("filename")
    answer = await ctx.elicit(f"Delete {filename}?", _all_required(confirm={"type": "boolean"}), key="confirm")
    content = answer.get("content")
    confirmed = answer.get("action") == "accept" and isinstance(content, dict) and content.get("confirm") is True
    return _text(f"Deleted {filename}" if confirmed else f"Kept {filename}")


@tool("multi_input", "Asks two questions at once (always a task)", tasks=TASK_ALWAYS)
async def multi_input(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    form = _all_required(name={"type": "string"})
    answers = await ctx.request_inputs(
        {"first": elicitation_form("First name?", form), "second": elicitation_form("Second name?", form)}
    )
    return _text(f"Got {_form_field(answers['first'], 'name')} and {_form_field(answers['second'], 'name')}")


@tool(
    "test_tool_with_task",
    "Asks for a name (one input_required round), then answers as a task",
    tasks=TASK_AFTER_INPUT,
    modern_only=True,
)
async def tool_with_task(ctx: RequestContext, arguments: Mapping[str, Any]) -> CallToolResult:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return _text(f"Hello, {_form_field(answer, 'name')}, from a task")


# --- prompts -----------------------------------------------------------------------------------

PromptFunction = Callable[[RequestContext, Mapping[str, str]], Awaitable[GetPromptResult]]


@dataclass(frozen=True, slots=True)
class FixturePrompt:
    definition: Prompt
    render: PromptFunction
    modern_only: bool


PROMPTS: dict[str, FixturePrompt] = {}


def prompt(
    name: str, title: str | None, description: str, *arguments: PromptArgument, modern_only: bool = False
) -> Callable[[PromptFunction], PromptFunction]:
    """Register the decorated function as the prompt `name`."""

    def register(render: PromptFunction) -> PromptFunction:
        definition = Prompt(name=name, title=title, description=description, arguments=arguments)
        PROMPTS[name] = FixturePrompt(definition, render, modern_only)
        return render

    return register


def _user(*blocks: TextContent | ImageContent | EmbeddedResource) -> GetPromptResult:
    return GetPromptResult(messages=[PromptMessage(role="user", content=block) for block in blocks])


def _required(arguments: Mapping[str, str], name: str) -> str:
    value = arguments.get(name)
    if value is None:
        raise invalid_params(f'Missing required argument "{name}"', {"field": f"arguments.{name}"})
    return value


@prompt("test_simple_prompt", "Simple Test Prompt", "A simple prompt without arguments")
async def simple_prompt(ctx: RequestContext, arguments: Mapping[str, str]) -> GetPromptResult:
    return _user(TextContent(text="This is a simple prompt for testing."))


@prompt(
    "test_prompt_with_arguments",
    "Prompt With Arguments",
    "A prompt with required arguments",
    PromptArgument(name="arg1", description="First test argument", required=True),
    PromptArgument(name="arg2", description="Second test argument", required=True),
)
async def prompt_with_arguments(ctx: RequestContext, arguments: Mapping[str, str]) -> GetPromptResult:
    arg1, arg2 = _required(arguments, "arg1"), _required(arguments, "arg2")
    return _user(TextContent(text=f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))


@prompt(
    "test_prompt_with_embedded_resource",
    "Prompt With Embedded Resource",
    "A prompt that includes an embedded resource",
    PromptArgument(name="resourceUri", description="URI of the resource to embed", required=True),
)
async def prompt_with_embedded_resource(ctx: RequestContext, arguments: Mapping[str, str]) -> GetPromptResult:
    uri = _required(arguments, "resourceUri")
    resource = TextResourceContents(uri=uri, text="Embedded resource content for testing.", mime_type="text/plain")
    return _user(
        EmbeddedResource(resource=resource),
        TextContent(text="Please process the embedded resource above."),
    )


@prompt("test_prompt_with_image", "Prompt With Image", "A prompt that includes image content")
async def prompt_with_image(ctx: RequestContext, arguments: Mapping[str, str]) -> GetPromptResult:
    return _user(
        ImageContent(data=PNG_1X1_BASE64, mime_type="image/png"),
        TextContent(text="Please analyze the image above."),
    )


@prompt("test_input_required_result_prompt", None, "MRTR: prompt that requires elicitation input", modern_only=True)
async def input_required_prompt(ctx: RequestContext, arguments: Mapping[str, str]) -> GetPromptResult:
    answer = await ctx.elicit(
        "What context should the prompt use?", _all_required(context={"type": "string"}), key="user_context"
    )
    return _user(TextContent(text=f"Prompt with context: {_form_field(answer, 'context')}"))


# --- resources ---------------------------------------------------------------------------------

STATIC_RESOURCES: dict[str, tuple[Resource, TextResourceContents | BlobResourceContents]] = {
    "test://static-text": (
        Resource(uri="test://static-text", name="static-text", title="Static Text Resource",
                 description="A static text resource for testing", mime_type="text/plain"),
        TextResourceContents(uri="test://static-text", mime_type="text/plain",
                             text="This is the content of the static text resource."),
    ),
    "test://static-binary": (
        Resource(uri="test://static-binary", name="static-binary", title="Static Binary Resource",
                 description="A static binary resource (image) for testing", mime_type="image/png"),
        BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=PNG_1X1_BASE64),
    ),
    "test://watched-resource": (
        Resource(uri="test://watched-resource", name="watched-resource", title="Watched Resource",
                 description="A resource clients may subscribe to", mime_type="text/plain"),
        TextResourceContents(uri="test://watched-resource", mime_type="text/plain", text="Watched resource content"),
    ),
}  # fmt: skip

DATA_TEMPLATE = ResourceTemplate(
    uri_template="test://template/{id}/data",
    name="template",
    title="Resource Template",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
_DATA_TEMPLATE_URI = re.compile(r"test://template/(?P<id>[^/]+)/data")


def _read_template(uri: str) -> TextResourceContents | None:
    match = _DATA_TEMPLATE_URI.fullmatch(uri)
    if match is None:
        return None
    item_id = match["id"]
    text = _compact_json({"id": item_id, "templateTest": True, "data": f"Data for ID: {item_id}"})
    return TextResourceContents(uri=uri, text=text, mime_type="application/json")


# --- the handler -------------------------------------------------------------------------------

LIST_METHODS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


def _is_modern(ctx: RequestContext) -> bool:
    return ctx.revision.era is Era.STATELESS


class ConformanceFixture(McpHandler):
    """Serves the conformance suite's fixed surface in both eras."""

    server_info = Implementation(name="mcp-conformance-test-server", version="1.0.0")
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
        tasks=True,
    )

    def cache_hint(self, method: str) -> CacheHint:
        if method in LIST_METHODS:
            return CacheHint(ttl_ms=300_000, scope="public")
        if method == "resources/read":
            return CacheHint(ttl_ms=300_000, scope="private")
        return CacheHint()

    def tool_definition(self, name: str) -> Tool | None:
        entry = TOOLS.get(name)
        return entry.definition if entry is not None else None

    def task_policy(self, name: str) -> TaskPolicy | None:
        entry = TOOLS.get(name)
        return entry.tasks if entry is not None else None

    async def list_tools(self, ctx: RequestContext, cursor: str | None) -> Page[Tool]:
        modern = _is_modern(ctx)
        return Page(items=[t.definition for t in TOOLS.values() if modern or not t.modern_only])

    async def call_tool(self, ctx: RequestContext, name: str, arguments: Mapping[str, Any]) -> CallToolResult:
        entry = TOOLS.get(name)
        if entry is None or (entry.modern_only and not _is_modern(ctx)):
            raise invalid_params(f"Unknown tool: {name}", {"field": "name"})
        return await entry.run(ctx, arguments)

    async def list_prompts(self, ctx: RequestContext, cursor: str | None) -> Page[Prompt]:
        modern = _is_modern(ctx)
        return Page(items=[p.definition for p in PROMPTS.values() if modern or not p.modern_only])

    async def get_prompt(self, ctx: RequestContext, name: str, arguments: Mapping[str, str]) -> GetPromptResult:
        entry = PROMPTS.get(name)
        if entry is None or (entry.modern_only and not _is_modern(ctx)):
            raise invalid_params(f"Unknown prompt: {name}", {"field": "name"})
        return await entry.render(ctx, arguments)

    async def list_resources(self, ctx: RequestContext, cursor: str | None) -> Page[Resource]:
        return Page(items=[resource for resource, _ in STATIC_RESOURCES.values()])

    async def list_resource_templates(self, ctx: RequestContext, cursor: str | None) -> Page[ResourceTemplate]:
        return Page(items=(DATA_TEMPLATE,))

    async def read_resource(self, ctx: RequestContext, uri: str) -> ReadResourceResult:
        static = STATIC_RESOURCES.get(uri)
        contents = static[1] if static is not None else _read_template(uri)
        if contents is None:
            raise ResourceNotFound(uri)
        return ReadResourceResult(contents=(contents,))

    async def complete(
        self,
        ctx: RequestContext,
        ref: CompletionRef,
        argument: str,
        value: str,
        context_arguments: Mapping[str, str],
    ) -> Completion:
        return Completion(values=(), total=0, has_more=False)


# --- serving -----------------------------------------------------------------------------------


def create_app(options: EndpointOptions | None = None) -> McpEndpoint:
    """The fixture as an ASGI app; loopback-only Host/Origin checks stay on (dns-rebinding scenario)."""
    return McpEndpoint(ConformanceFixture(), options or EndpointOptions())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the MCP conformance fixture on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=3101)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    # Open listen/GET streams never end by themselves: the short graceful timeout lets
    # Ctrl-C stop the server anyway.
    uvicorn.run(
        create_app(),
        host="127.0.0.1",
        port=args.port,
        log_level=args.log_level,
        access_log=False,
        timeout_graceful_shutdown=2,
    )


if __name__ == "__main__":
    main()
