"""An MCP server that misbehaves: every answer is bounded and read by its fields' types, and each way of failing
is a clear tool error (never a gateway error, never a wait without end)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from starlette.types import Receive, Scope, Send

from apimcp.backends.base import Failure, McpResult, ToolAnswer
from apimcp.backends.credentials import ApiKey
from apimcp.backends.rest import close_session, new_session
from apimcp.catalog.model import McpBinding, Operation, ServerTemplate, Service
from apimcp.federation.backend import McpBackend
from apimcp.protocol.errors import MissingClientCapability
from apimcp.protocol.models import NO_VALUE, ResourceLink, TextContent
from tests.support.live_server import live_server, whole_body

pytestmark = pytest.mark.anyio
Answer = Callable[[Mapping[str, Any]], tuple[int, str, bytes]]
"""A tools/call request → (status, content type, body)."""


def hostile(answer: Answer) -> Any:
    """A stateless upstream (it answers server/discover) whose tools/call answer is `answer`'s."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = json.loads(await whole_body(receive))
        if request["method"] == "server/discover":
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
            status, kind, payload = (
                200,
                "application/json",
                json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode(),
            )
        else:
            status, kind, payload = answer(request)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind.encode())]})
        await send({"type": "http.response.body", "body": payload})

    return app


def result(request: Mapping[str, Any], value: Any) -> tuple[int, str, bytes]:
    return 200, "application/json", json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": value}).encode()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    session = new_session()
    yield session
    await close_session(session)


async def call(http: aiohttp.ClientSession, answer: Answer, max_bytes: int = 64 * 1024) -> Any:
    with live_server(hostile(answer)) as base:
        url = base.replace("//localhost:", "//127.0.0.1:") + "/mcp"
        operation = Operation("echo", {"type": "object"}, McpBinding("echo"))
        service = Service("hostile", "1", (operation,), servers=(ServerTemplate(url),), kind="mcp")
        backend = McpBackend(service, http, timeout_seconds=5, max_response_bytes=max_bytes)
        try:
            return await backend.call(operation, {})
        finally:
            await backend.close()


async def test_an_answer_larger_than_the_plans_limit_is_refused(http: aiohttp.ClientSession) -> None:
    answered = await call(http, lambda r: result(r, {"content": [{"type": "text", "text": "x" * 100_000}]}))
    assert isinstance(answered, Failure) and "larger than the 65536 bytes allowed" in answered.message


async def test_a_stream_larger_than_the_plans_limit_is_cut(http: aiohttp.ClientSession) -> None:
    event = (
        b"event: message\ndata: "
        + json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "y" * 1000}}
        ).encode()
        + b"\n\n"
    )
    answered = await call(http, lambda r: (200, "text/event-stream", event * 200))
    assert isinstance(answered, Failure) and "larger than" in answered.message


async def test_a_stream_that_ends_without_the_result_is_a_failure(http: aiohttp.ClientSession) -> None:
    answered = await call(http, lambda r: (200, "text/event-stream", b"event: message\ndata: {}\n\n"))
    assert isinstance(answered, Failure) and "ended without the result" in answered.message


async def test_what_is_not_json_rpc_is_a_failure_naming_it(http: aiohttp.ClientSession) -> None:
    answered = await call(http, lambda r: (200, "text/html", b"<html>hello</html>"))
    assert isinstance(answered, Failure) and "not JSON" in answered.message


async def test_content_is_read_block_by_block(http: aiohttp.ClientSession) -> None:
    blocks = [
        {"type": "text", "text": "kept"},
        {"type": "text", "text": 42},
        {"type": "hologram", "data": "?"},
        "not an object",
        {"type": "resource_link", "uri": "notes://1", "name": "first", "size": "big"},
    ]
    answered = await call(http, lambda r: result(r, {"content": blocks, "structuredContent": [1, 2], "isError": "yes"}))
    assert isinstance(answered, ToolAnswer)
    content = answered.result.content
    assert isinstance(content[0], TextContent) and content[0].text == "kept"
    assert isinstance(content[1], TextContent) and "left out" in content[1].text  # text of the wrong type
    assert isinstance(content[2], TextContent) and "'hologram'" in content[2].text
    assert isinstance(content[3], TextContent) and "not an object" in content[3].text
    assert isinstance(content[4], ResourceLink) and content[4].size is None
    assert answered.result.is_error is False  # only `true` is true
    assert answered.result.structured_content is NO_VALUE  # structured content is an object, or none


async def test_a_result_that_is_no_tool_result_is_a_failure(http: aiohttp.ClientSession) -> None:
    answered = await call(http, lambda r: result(r, {"content": "everything"}))
    assert isinstance(answered, Failure) and "not a tool result" in answered.message


async def test_an_input_required_without_a_client_to_ask_is_given_up(http: aiohttp.ClientSession) -> None:
    asks = {"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create", "params": {}}}}
    answered = await call(http, lambda r: result(r, asks))
    assert isinstance(answered, Failure) and "keeps asking the user for input" in answered.message


async def test_an_error_about_the_client_reaches_it_as_the_engines_own(http: aiohttp.ClientSession) -> None:
    error = {"code": -32021, "message": "needs sampling", "data": {"requiredCapabilities": {"sampling": {}}}}
    body = json.dumps({"jsonrpc": "2.0", "id": 0, "error": error})
    with pytest.raises(MissingClientCapability) as raised:
        await call(http, lambda r: (400, "application/json", body.replace('"id": 0', f'"id": {r["id"]}').encode()))
    assert raised.value.capabilities == {"sampling": {}}


async def test_a_read_of_something_else_than_a_tool_is_a_plain_result(http: aiohttp.ClientSession) -> None:
    with live_server(hostile(lambda r: result(r, {"contents": []}))) as base:
        url = base.replace("//localhost:", "//127.0.0.1:") + "/mcp"
        operation = Operation("resources_read", {"type": "object"}, McpBinding("notes://1", method="resources/read"))
        service = Service("hostile", "1", (), servers=(ServerTemplate(url),), kind="mcp")
        backend = McpBackend(service, http, timeout_seconds=5)
        try:
            assert await backend.call(operation, {}) == McpResult({"contents": []})
        finally:
            await backend.close()


async def test_a_result_written_on_one_long_event_line_arrives_whole(http: aiohttp.ClientSession) -> None:
    """The official SDKs write a result as one `data:` line: one past aiohttp's 512 KiB line bound once failed."""
    text = "z" * 800_000
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": text}]}})

    def answer(request: Mapping[str, Any]) -> tuple[int, str, bytes]:
        return (
            200,
            "text/event-stream",
            b"event: message\ndata: " + line.replace('"id": 0', f'"id": {request["id"]}').encode() + b"\n\n",
        )

    answered = await call(http, answer, max_bytes=4 * 1024 * 1024)
    assert isinstance(answered, ToolAnswer), answered
    [block] = answered.result.content
    assert isinstance(block, TextContent) and block.text == text


async def test_an_error_message_is_cut_and_loses_its_control_characters(http: aiohttp.ClientSession) -> None:
    said = "\x1b[2J\x1b]0;pwned\x07" + "E" * 100_000

    def answer(request: Mapping[str, Any]) -> tuple[int, str, bytes]:
        error = {"code": -32000, "message": said}
        return 200, "application/json", json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()

    answered = await call(http, answer, max_bytes=1_000_000)
    assert isinstance(answered, Failure)
    assert "\x1b" not in answered.message and "\x07" not in answered.message
    assert len(answered.message) < 2100 and answered.message.endswith("E…")


async def test_an_answer_naming_another_id_that_equals_it_in_python_is_no_answer(http: aiohttp.ClientSession) -> None:
    answered = await call(http, lambda r: result({"id": float(r["id"])}, {"content": []}))
    assert isinstance(answered, Failure)


async def test_an_event_stream_that_redirects_elsewhere_is_not_followed(http: aiohttp.ClientSession) -> None:
    """The plan's credential headers would travel with the redirect (aiohttp drops only Authorization and
    Cookie): another origin must hear nothing."""
    heard: list[dict[str, str]] = []

    async def elsewhere(request: web.Request) -> web.Response:
        heard.append(dict(request.headers))
        return web.Response(status=404)

    async def sse(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://127.0.0.2:{other_port}/collect")

    async def no_post(request: web.Request) -> web.Response:
        return web.Response(status=405)

    other = web.Application()
    other.router.add_route("*", "/{tail:.*}", elsewhere)
    upstream = web.Application()
    upstream.router.add_get("/sse", sse)
    upstream.router.add_post("/sse", no_post)
    runners = [web.AppRunner(other), web.AppRunner(upstream)]
    for runner in runners:
        await runner.setup()
    sites = [web.TCPSite(runners[0], "127.0.0.2", 0), web.TCPSite(runners[1], "127.0.0.1", 0)]
    for site in sites:
        await site.start()
    other_port, port = (site._server.sockets[0].getsockname()[1] for site in sites)  # type: ignore[union-attr]
    operation = Operation("echo", {"type": "object"}, McpBinding("echo"))
    service = Service("s", "1", (operation,), servers=(ServerTemplate(f"http://127.0.0.1:{port}/sse"),), kind="mcp")
    backend = McpBackend(service, http, timeout_seconds=5, credentials=ApiKey("X-Api-Key", "plan-secret"))
    try:
        answered = await backend.call(operation, {})
    finally:
        await backend.close()
        for runner in runners:
            await runner.cleanup()
    assert isinstance(answered, Failure) and "HTTP 302" in answered.message
    assert heard == []


async def test_a_call_cancelled_while_its_session_opens_leaves_the_others_waiting_on_it_alone(
    http: aiohttp.ClientSession,
) -> None:
    opened = asyncio.Event()

    async def post(request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("method") == "server/discover":
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}})
        if body.get("method") == "initialize":
            await opened.wait()  # held until the test lets it go
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "slow", "version": "1"}}  # fmt: skip
            return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result},
                                     headers={"Mcp-Session-Id": "s1"})  # fmt: skip
        if "id" not in body:
            return web.Response(status=202)
        answer = {"content": [{"type": "text", "text": "ok"}]}
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": answer})

    upstream = web.Application()
    upstream.router.add_post("/mcp", post)
    runner = web.AppRunner(upstream)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    operation = Operation("echo", {"type": "object"}, McpBinding("echo"))
    service = Service("s", "1", (operation,), servers=(ServerTemplate(f"http://127.0.0.1:{port}/mcp"),), kind="mcp")
    backend = McpBackend(service, http, timeout_seconds=5)
    try:
        first = asyncio.create_task(backend.call(operation, {}))
        await asyncio.sleep(0.1)
        second = asyncio.create_task(backend.call(operation, {}))
        await asyncio.sleep(0.1)
        first.cancel()  # its client went away while it opened the session the second waits on
        await asyncio.sleep(0.1)
        opened.set()
        answered = await second
        assert isinstance(answered, ToolAnswer), answered
        assert first.cancelled()
    finally:
        await backend.close()
        await runner.cleanup()
