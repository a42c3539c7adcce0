"""Code mode through a gateway, with the official client in both eras: an exposition lists search_tools,
describe_tools (with TypeScript declarations) and execute_code; a program's calls run in parallel, each governed
as a client's call of the tool (validation, rate limits, audit, spans, the plan's read-only mode); a program that
never ends or eats memory is stopped while other requests go on."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from apimcp.codemode.limits import CodeModeLimits
from apimcp.telemetry import OFF, Telemetry, install
from apimcp.telemetry.spans import CLIENT, INTERNAL, SERVER
from apimcp.telemetry.tracing import Tracing
from tests.gateway.conftest import ECHO_SPEC, live_echo_gateway
from tests.support.mcp_http import McpHttp
from tests.telemetry.test_span_path import Kept

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "legacy"]
"""The official client stateless, then in a 2025-11-25 session."""
CONFIG = f"""
services:
  echo: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5}}
  held: {{openapi: {ECHO_SPEC}, backend: "{{backend}}", timeout: 5, read_only_tools: [delete_item, "GET /query"]}}
expositions:
  code: {{services: [echo], code_mode: on, audit: true}}
  reader: {{services: [echo], code_mode: read_only}}
  audited_reader: {{services: [echo], code_mode: read_only, audit: true}}
  held_reader: {{services: [held], code_mode: read_only}}
  limited: {{services: [echo], code_mode: true, rate_limit: {{exposition: 5/min}}}}
"""
PARALLEL = """
const [a, b, c] = await Promise.all([
  tools.get_item({itemId: "1"}),
  tools.get_item({itemId: "2", verbose: true}),
  tools.get_item({itemId: "3"}),
]);
return {paths: [a.path, b.path, c.path], query: b.query};
"""


LIMITS = CodeModeLimits(timeout_seconds=3)
"""Enough for any program here on a loaded machine, and a short wait for the endless one."""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_echo_gateway(CONFIG, tmp_path_factory.mktemp("code"), LIMITS) as url:
        yield url


def _text(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def _run(url: str, mode: str, code: str) -> CallToolResult:
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        return await client.call_tool("execute_code", {"code": code})


@pytest.mark.parametrize("mode", MODES)
async def test_a_code_mode_exposition_lists_discovery_and_execute_code(base: str, mode: str) -> None:
    async with Client(f"{base}/mcp/code", mode=mode) as client:  # type: ignore[arg-type]
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["search_tools", "describe_tools", "execute_code"]
        (execute,) = [tool for tool in listed.tools if tool.name == "execute_code"]
        assert execute.input_schema["required"] == ["code"]
        assert execute.description is not None and "3 s, 100 tool calls" in execute.description
        found = await client.call_tool("search_tools", {"query": "read an item"})
        assert found.structured_content is not None
        assert found.structured_content["tools"][0]["name"] == "get_item"
        described = await client.call_tool("describe_tools", {"names": ["get_item", "replace_item"]})
        assert described.structured_content is not None
        declarations = described.structured_content["typescript"]
        assert declarations.startswith("declare const tools: {\n  /** Read an item */\n  get_item(args: {\n")
        assert "    itemId: string;\n    verbose?: boolean;\n" in declarations
        assert "}): Promise<{ method?: string; path?: string; }>;" in declarations
        assert [t["name"] for t in described.structured_content["tools"]] == ["get_item", "replace_item"]
        assert "inputSchema" not in described.structured_content["tools"][0]  # the declarations say it, smaller
        full = await client.call_tool("describe_tools", {"names": ["get_item"], "schemas": True})
        assert full.structured_content is not None
        (tool,) = full.structured_content["tools"]
        assert tool["inputSchema"]["required"] == ["itemId"] and "outputSchema" in tool
        wrong = await client.call_tool("describe_tools", {"names": ["get_item"], "schemas": "yes"})
        assert wrong.is_error and wrong.content[0].text == '"schemas" must be true or false'  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_a_program_makes_several_calls_in_parallel_and_only_its_result_comes_back(base: str, mode: str) -> None:
    result = await _run(f"{base}/mcp/code", mode, PARALLEL)
    assert not result.is_error, result
    assert result.structured_content == {"paths": ["/v1/items/1", "/v1/items/2", "/v1/items/3"],
                                         "query": "verbose=true"}  # fmt: skip
    assert json.loads(_text(result)) == result.structured_content


STAGGERED = """
const a = tools.get_item({itemId: "a"});
const b = tools.get_item({itemId: "b"});
await a;
const c = tools.get_item({itemId: "c"});
const rc = await c;
const rb = await b;
return {c: rc.path, b: rb.path};
"""
"""Calls started while others are under way, after one has ended: each keeps its own promise."""


@pytest.mark.parametrize("mode", MODES)
async def test_calls_started_after_others_ended_keep_their_own_promises(base: str, mode: str) -> None:
    result = await _run(f"{base}/mcp/code", mode, STAGGERED)
    assert not result.is_error, result
    assert result.structured_content == {"c": "/v1/items/c", "b": "/v1/items/b"}


@pytest.mark.parametrize("mode", MODES)
async def test_an_inner_call_s_arguments_are_validated_as_a_direct_call_s(base: str, mode: str) -> None:
    code = "const echo = await tools.get_item({itemId: 5});\nreturn echo;"
    result = await _run(f"{base}/mcp/code", mode, code)
    assert result.is_error
    assert _text(result).startswith("The program failed at line 1: tools.get_item failed: Invalid arguments")


@pytest.mark.parametrize("mode", MODES)
async def test_errors_name_the_line_of_the_program(base: str, mode: str) -> None:
    code = "const a = await tools.get_item({itemId: '1'});\nconst b = a.nothing.deeper;\nreturn b;"
    result = await _run(f"{base}/mcp/code", mode, code)
    assert result.is_error
    assert _text(result) == "The program failed at line 2: TypeError: cannot read property 'deeper' of undefined"
    unknown = await _run(f"{base}/mcp/code", mode, "\nawait tools.get_everything({});")
    assert _text(unknown) == "The program failed at line 2: tools.get_everything failed: Unknown tool: get_everything"


@pytest.mark.parametrize("mode", MODES)
async def test_read_only_code_mode_refuses_a_write_inside_a_program(base: str, mode: str) -> None:
    url = f"{base}/mcp/reader"
    code = "const read = await tools.get_item({itemId: '1'});\nawait tools.delete_item({itemId: '1'});\nreturn read;"
    result = await _run(url, mode, code)
    assert result.is_error
    assert _text(result) == (
        "The program failed at line 2: tools.delete_item failed: delete_item may change data: this server's "
        "programs call only tools that change nothing"
    )
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        found = await client.call_tool("search_tools", {"query": "delete an item", "limit": 20})
        assert found.structured_content is not None
        names = {hit["name"] for hit in found.structured_content["tools"]}
        assert "get_item" in names and "delete_item" not in names and "replace_item" not in names
        direct = await client.call_tool("delete_item", {"itemId": "1"})
        assert direct.is_error and "may change data" in _text(direct)


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_a_rate_limit_is_hit_inside_the_program(tmp_path: Path, version: str) -> None:
    # 5 requests a minute: whatever the client's own requests took, the program's calls spend the rest
    code = """
const got = [];
for (let i = 0; i < 6; i++) {
  try { await tools.get_item({itemId: String(i)}); got.push("ok"); } catch (e) { got.push(e.message); }
}
return got;"""
    call = {"name": "execute_code", "arguments": {"code": code}}
    with live_echo_gateway(CONFIG, tmp_path) as url, McpHttp(f"{url}/mcp/limited") as mcp:
        if version == "2026-07-28":
            reply = mcp.modern("tools/call", call)
        else:
            reply = mcp.initialize(version).request("tools/call", call)
    got = json.loads(reply.result["content"][0]["text"])
    refused = "tools.get_item failed: Rate limit of exposition 'limited' reached (all its callers together): try again"
    served = got.index(next(g for g in got if g != "ok"))
    assert served >= 1 and all(g == "ok" for g in got[:served])
    assert all(g.startswith(refused) for g in got[served:]), got


async def test_inner_calls_are_audited_under_the_execute_code_call_and_traced_as_its_children(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    kept = Kept()
    install(Telemetry(tracing=Tracing(kept)))
    try:
        with live_echo_gateway(CONFIG, tmp_path) as url, McpHttp(f"{url}/mcp/code") as mcp:
            reply = mcp.modern("tools/call", {"name": "execute_code", "arguments": {"code": PARALLEL}})
    finally:
        install(OFF)
    assert reply.result["structuredContent"]["query"] == "verbose=true"
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    inner = [event for event in events if "via" in event]
    assert [(e["target"], e["outcome"]) for e in inner] == [("get_item", "success")] * 3
    assert {json.dumps(e["via"], sort_keys=True) for e in inner} == {
        json.dumps({"tool": "execute_code", "exposition_id": "code", "exposition": "code"}, sort_keys=True)
    }
    (outer,) = [event for event in events if "via" not in event]
    assert (outer["target"], outer["outcome"]) == ("execute_code", "success")
    (request,) = [span for span in kept.spans if span.kind == SERVER]
    assert request.name == "tools/call execute_code"
    calls = [span for span in kept.spans if span.kind == INTERNAL]
    assert [span.name for span in calls] == ["tools/call get_item"] * 3
    assert {span.parent_id for span in calls} == {request.span_id}
    assert {span.attributes["apimcp.via.tool"] for span in calls} == {"execute_code"}
    backend = [span for span in kept.spans if span.kind == CLIENT]
    assert {span.parent_id for span in backend} == {span.span_id for span in calls}


@pytest.mark.parametrize("mode", MODES)
async def test_the_plan_names_the_read_only_tools_whatever_the_description_says(base: str, mode: str) -> None:
    """A service's `read_only_tools` decides what read-only code mode may call: what they select, and nothing else
    (the gap: a tool of an MCP server claiming readOnlyHint while it writes was believed)."""
    url = f"{base}/mcp/held_reader"
    refused = await _run(url, mode, "return await tools.get_item({itemId: '1'});")
    assert refused.is_error and "get_item may change data" in _text(refused)
    allowed = await _run(url, mode, "return await tools.delete_item({itemId: '1'});")
    assert not allowed.is_error
    async with Client(url, mode=mode) as client:  # type: ignore[arg-type]
        described = await client.call_tool("describe_tools", {"names": ["delete_item"]})
        hidden = await client.call_tool("describe_tools", {"names": ["get_item"]})
    assert described.structured_content is not None
    (tool,) = described.structured_content["tools"]
    assert tool["annotations"]["readOnlyHint"] is True and "destructiveHint" not in tool["annotations"]
    assert hidden.is_error and "Unknown tools: get_item" in _text(hidden)  # what it may not call, it does not see


def test_inner_calls_refused_before_any_tool_is_reached_are_audited_too(
    base: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The finding: a call the read-only mode, a missing scope or an unknown name refused inside a program left no
    audit event (the same refusal of a client's own call is audited), so a program could probe tools unseen."""
    caplog.set_level(logging.INFO, logger="apimcp.audit")
    code = """
const told = [];
for (const call of [() => tools.delete_item({itemId: "1"}), () => tools.no_such_tool({})]) {
  try { await call(); } catch (e) { told.push(e.code); }
}
return told;"""
    with McpHttp(f"{base}/mcp/audited_reader") as mcp:
        reply = mcp.modern("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    assert json.loads(reply.result["content"][0]["text"]) == [-32602, -32602]
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "apimcp.audit"]
    inner = [(e["target"], e["outcome"], e["error_code"], e["via"]["tool"]) for e in events if "via" in e]
    refused = ("error", -32602, "execute_code")
    assert inner == [("delete_item", *refused), ("no_such_tool", *refused)]


@pytest.mark.parametrize(
    ("code", "told"),
    [
        ("throw null;", "The program ran out of memory (its limit is 64 MiB) or threw null"),
        ("throw undefined;", "The program failed: undefined"),
        ("throw 'out of paper';", "The program failed: out of paper"),
    ],
)
async def test_a_program_throwing_a_value_is_not_said_to_have_run_out_of_memory(base: str, code: str,
                                                                                 told: str) -> None:  # fmt: skip
    result = await _run(f"{base}/mcp/code", "2026-07-28", code)
    assert result.is_error
    assert _text(result).startswith(told)


@pytest.mark.parametrize(
    ("code", "told"),
    [
        ("for (;;) {}", "The program timed out after 3 s"),
        ("const hog = [];\nfor (;;) hog.push('x'.repeat(1000) + hog.length);", "The program ran out of memory"),
    ],
)
async def test_an_endless_or_memory_hungry_program_is_stopped_while_other_requests_go_on(
    base: str, code: str, told: str
) -> None:
    url = f"{base}/mcp/code"
    async with Client(url, mode="2026-07-28") as client:  # type: ignore[arg-type]
        hungry = asyncio.create_task(client.call_tool("execute_code", {"code": code}))
        others = []
        quick = {"code": "return (await tools.get_item({itemId: '7'})).path;"}
        while not hungry.done() and len(others) < 5:
            others.append(await client.call_tool("execute_code", quick))
        assert [_text(result) for result in others] == ['"/v1/items/7"'] * len(others)
        # answered while the other program still ran: how many depends on how fast it fills its memory and on the
        # machine's load (5 on a quiet one; CI, loaded, saw 4), not on the sandbox
        assert others
        result = await hungry
    assert result.is_error
    assert _text(result).startswith(told)
