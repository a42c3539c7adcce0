"""The sandbox end to end: the script API, each guardrail, and the event loop left free."""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson
import pytest

from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner, ToolRef
from apimcp.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_CANCELLED, SERVER_BUSY, McpError
from apimcp.protocol.models import NO_VALUE, CallToolResult, RawJson, TextContent
from tests.artifacts.scripting.conftest import LIMITS
from tests.artifacts.scripting.support import RAW_ROWS, Tools, script, text, until_called, until_idle

pytestmark = pytest.mark.anyio

EXAMPLE = """
const u = rs.callTool("get_user", {login: input.login});
if (!u.ok) rs.fail("no such user", {login: input.login});
const ps = [rs.callToolAsync("list_repos", {owner: input.login}),
            rs.callToolAsync("Other Service:1.0", "search", {q: input.login})];
const [repos, hits] = rs.awaitPromises(ps);
return {user: u.content, repos: repos.content, hits: hits.ok ? hits.content : null};
"""


async def test_the_example_script_calls_its_tools_and_returns_an_object(runner: ScriptRunner, tools: Tools) -> None:
    tools.scripts = {}
    example = script(
        EXAMPLE.replace('"get_user"', '"echo"').replace('"list_repos"', '"json_text"'),
        "echo",
        "json_text",
        ("Other Service:1.0", "search"),
    )
    result = await runner.run(example, {"login": "ann"}, tools, depth=2)
    assert not result.is_error
    expected = {"user": {"got": {"login": "ann"}}, "repos": [1, "two"], "hits": None}  # search is unknown
    assert result.structured_content == expected
    assert orjson.loads(text(result)) == expected
    assert " " not in text(result)  # compact JSON
    assert [(ref, depth) for ref, _, depth in tools.calls] == [
        (ToolRef(None, "echo"), 3),
        (ToolRef(None, "json_text"), 3),
        (ToolRef("Other Service:1.0", "search"), 3),
    ]


async def test_a_script_sees_each_kind_of_tool_result(runner: ScriptRunner, tools: Tools) -> None:
    source = """
    const names = ["echo", "json_text", "plain_text", "error_result", "invalid", "crash"];
    const out = {};
    for (const n of names) out[n] = rs.callTool(n, {a: 1});
    out.noArguments = rs.callTool("echo");
    return out;
    """
    allowed = ("echo", "json_text", "plain_text", "error_result", "invalid", "crash")
    result = await runner.run(script(source, *allowed), {}, tools)
    seen = result.structured_content
    assert seen["echo"] == {"ok": True, "content": {"got": {"a": 1}}, "error": None}
    assert seen["json_text"] == {"ok": True, "content": [1, "two"], "error": None}
    assert seen["plain_text"] == {"ok": True, "content": "just words", "error": None}
    assert seen["error_result"] == {
        "ok": False,
        "content": {"reason": "nope"},
        "error": {"code": None, "message": '{"reason": "nope"}'},
    }
    assert seen["invalid"] == {
        "ok": False,
        "content": None,
        "error": {"code": INVALID_PARAMS, "message": "login is required"},
    }
    assert seen["crash"]["error"]["code"] == INTERNAL_ERROR
    assert "secret" not in seen["crash"]["error"]["message"]
    assert seen["noArguments"]["content"] == {"got": {}}


@pytest.mark.parametrize(
    ("body", "expected_text", "structured"),
    [
        ("return {a: [1, 'x'], b: null}", '{"a":[1,"x"],"b":null}', {"a": [1, "x"], "b": None}),
        ("return [1, 2]", "[1,2]", NO_VALUE),
        ("return 'hé 😀'", '"hé 😀"', NO_VALUE),
        ("return input.n * 2", "42", NO_VALUE),
        ("// nothing returned", "null", NO_VALUE),
        ("return () => 1", "null", NO_VALUE),
    ],
)
async def test_the_returned_value_is_the_result(
    runner: ScriptRunner, tools: Tools, body: str, expected_text: str, structured: object
) -> None:
    result = await runner.run(script(body), {"n": 21}, tools)
    assert not result.is_error
    assert text(result) == expected_text
    assert result.structured_content == structured


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("throw new Error('no luck')", "no luck"),
        ("throw new TypeError('bad type')", "TypeError: bad type"),
        ("throw 'a string'", "a string"),
        ("null.x", "TypeError: cannot read property 'x' of null"),
        ("throw new Error('x'.repeat(5000))", "x" * 2000),
        ("throw new Error('cut \\ud83d')", "cut \ufffd"),
    ],
)
async def test_an_uncaught_exception_is_an_error_result(
    runner: ScriptRunner, tools: Tools, body: str, message: str
) -> None:
    result = await runner.run(script(body), {}, tools)
    assert result.is_error
    assert text(result) == message


async def test_rs_fail_ends_the_run_even_if_the_script_catches_it(runner: ScriptRunner, tools: Tools) -> None:
    source = """
    try { rs.fail("no such user", {login: input.login}); } catch (e) {}
    let after;
    try { rs.callTool("echo", {}); } catch (e) { after = e.message; }
    return {after};
    """
    result = await runner.run(script(source, "echo"), {"login": "zed"}, tools)
    assert result.is_error
    assert orjson.loads(text(result)) == {"message": "no such user", "data": {"login": "zed"}}
    assert tools.calls == []  # the call after rs.fail was refused
    plain = await runner.run(script("rs.fail('plain')"), {}, tools)
    assert orjson.loads(text(plain)) == {"message": "plain", "data": None}


async def test_a_syntax_error_names_the_tool_and_the_line(runner: ScriptRunner, tools: Tools) -> None:
    result = await runner.run(script("const a = 1;\nreturn a +;", name="broken"), {}, tools)
    assert result.is_error
    assert text(result).startswith("Custom tool 'broken' failed to compile: SyntaxError:")
    assert "(line 2, column" in text(result)


@pytest.mark.parametrize(
    "body",
    [
        "} function x() {",
        "}); globalThis.escaped = 1; (function(){",
        # smuggled code running at compile time finds no host function to call
        "}); (typeof __apimcp_call === 'function' ? __apimcp_call('[null,\"echo\",{}]') : 0); (function(){",
    ],
)
async def test_the_body_cannot_escape_its_function(runner: ScriptRunner, tools: Tools, body: str) -> None:
    result = await runner.run(script(body, "echo", name="sly"), {}, tools)
    assert result.is_error
    assert text(result).startswith("Custom tool 'sly' failed to compile:")
    assert tools.calls == []


async def test_a_tool_outside_the_allow_list_is_refused_by_name(runner: ScriptRunner, tools: Tools) -> None:
    uncaught = await runner.run(script("rs.callTool('delete_repo', {})", "echo", name="guarded"), {}, tools)
    assert uncaught.is_error
    assert text(uncaught) == ("Custom tool 'guarded' may not call tool 'delete_repo': it is not declared in its tools")
    source = """
    const out = [];
    for (const call of [() => rs.callTool("Other:1.0", "echo", {}), () => rs.callToolAsync("search", {})]) {
      try { call(); out.push("called"); } catch (e) { out.push(e.message); }
    }
    return out;
    """
    caught = await runner.run(script(source, "echo", ("Other:1.0", "search")), {}, tools)
    assert caught.structured_content is NO_VALUE
    assert orjson.loads(text(caught)) == [
        "Custom tool 'probe' may not call tool 'echo' of service 'Other:1.0': it is not declared in its tools",
        "Custom tool 'probe' may not call tool 'search': it is not declared in its tools",
    ]
    assert tools.calls == []


async def test_the_call_budget_counts_every_call(tools: Tools) -> None:
    runner = ScriptRunner(ScriptLimits(max_calls=3))
    source = """
    rs.callTool("echo", {});
    rs.awaitPromises([rs.callToolAsync("echo", {}), rs.callToolAsync("echo", {})]);
    try { rs.callTool("echo", {}); } catch (e) { return e.message; }
    """
    result = await runner.run(script(source, "echo", name="chatty"), {}, tools)
    runner.close()
    assert text(result) == "\"Custom tool 'chatty' may make at most 3 tool calls per run\""
    assert len(tools.calls) == 3


async def test_nesting_stops_at_the_depth_limit_without_deadlock(tools: Tools) -> None:
    # One worker per level: a script waiting on the scripted tool it called must not block it.
    runner = ScriptRunner(ScriptLimits(max_depth=3, workers=1, max_queued=0))
    tools.runner = runner
    source = """
    const inner = rs.callTool("nest", {level: input.level + 1});
    return {level: input.level, inner: inner.ok ? inner.content : inner.error.message};
    """
    tools.scripts["nest"] = script(source, "nest", name="nest")
    result = await runner.run(tools.scripts["nest"], {"level": 0}, tools)
    runner.close()
    seen = result.structured_content
    for level in range(4):
        assert seen["level"] == level
        seen = seen["inner"]
    assert seen == "Custom tool 'nest' is nested too deeply: scripts calling scripts may go 3 levels deep"
    assert [depth for _, _, depth in tools.calls] == [1, 2, 3, 4]


async def test_a_busy_loop_times_out_at_the_deadline_and_its_worker_stops(
    short_runner: ScriptRunner, tools: Tools
) -> None:
    start = time.monotonic()
    result = await short_runner.run(script("while (true) {}", name="spin"), {}, tools)
    answered = time.monotonic() - start
    assert text(result) == "Custom tool 'spin' timed out after 0.3 s"
    assert 0.29 < answered < 3  # timing-ok: ten times its deadline; it answers at it, not when the loop ends
    await until_idle(short_runner, within=10)  # the CPU interrupt stops it: at once if it has a core to itself


async def test_a_script_waiting_on_a_slow_tool_times_out_and_the_call_is_cancelled(
    short_runner: ScriptRunner, tools: Tools
) -> None:
    start = time.monotonic()
    patient = script("rs.callTool('sleep', {s: 30}); return 1", "sleep", name="patient")
    result = await short_runner.run(patient, {}, tools)
    assert text(result) == "Custom tool 'patient' timed out after 0.3 s"
    assert time.monotonic() - start < 3  # timing-ok: ten times its deadline, a tenth of the tool's sleep
    await until_idle(short_runner, within=5)  # its worker is not held by the tool's 30 s
    await asyncio.sleep(0)
    assert tools.cancelled == 1


async def test_a_script_that_loops_after_the_deadline_is_interrupted_at_it(
    short_runner: ScriptRunner, tools: Tools
) -> None:
    # After the deadline the tool refusals cannot stop a loop that makes no call: the interrupt does.
    source = "try { rs.callTool('sleep', {s: 5}); } catch (e) {} while (true) {}"
    result = await short_runner.run(script(source, "sleep", name="stubborn"), {}, tools)
    assert text(result) == "Custom tool 'stubborn' timed out after 0.3 s"
    await until_idle(short_runner, within=10.0)


async def test_a_worker_is_free_the_moment_its_caller_is_answered(tools: Tools) -> None:
    # Finding M1 of issue 21: a worker stayed busy after its caller was answered (the engine stopped on CPU time,
    # and a script that had waited on a tool still had all of it). One worker, no queue: the next run needs it.
    runner = ScriptRunner(ScriptLimits(timeout_seconds=0.3, workers=1, max_queued=0))
    source = "try { rs.callTool('sleep', {s: 5}); } catch (e) {} while (true) {}"
    result = await runner.run(script(source, "sleep", name="stubborn"), {}, tools)
    assert text(result) == "Custom tool 'stubborn' timed out after 0.3 s"
    assert text(await runner.run(script("return 'next'"), {}, tools)) == '"next"'
    await until_idle(runner, within=5.0)
    runner.close()


async def test_an_exposition_flooding_the_workers_leaves_the_others_their_share(tools: Tools) -> None:
    # Finding M1 of issue 21: clients of one exposition calling a slow script made every other exposition's
    # scripts answer "all 4 script workers are busy" (here they would wait until their deadline, then say so).
    runner = ScriptRunner(ScriptLimits(timeout_seconds=5, workers=2, exposition_workers=1, max_queued=2))
    held = script("rs.callTool('hold', {}); return 'a'", "hold", name="slow")
    flood = [asyncio.create_task(runner.run(held, {}, tools, share="A")) for _ in range(3)]
    await until_called(tools, 1)
    with pytest.raises(McpError) as refused:  # its queue (2) is full
        await runner.run(held, {}, tools, share="A")
    assert refused.value.message == (
        "Custom tool 'slow' cannot run now: its exposition's 1 of the 2 script workers are busy"
    )
    other = await runner.run(script("return 'b'", name="quick"), {}, tools, share="B")
    assert text(other) == '"b"'
    assert not any(task.done() for task in flood)  # B was answered while A's runs still held or waited
    tools.let_go.set()
    assert [text(await task) for task in flood] == ['"a"'] * 3
    runner.close()


async def test_memory_is_limited(runner: ScriptRunner, tools: Tools) -> None:
    bomb = 'let a = []; while (true) a.push("x".repeat(1e6));'
    result = await runner.run(script(bomb, name="hungry"), {}, tools)
    assert text(result) == "Custom tool 'hungry' ran out of memory: it exceeded its memory limit of 16 MiB"
    caught = await runner.run(script(f"try {{ {bomb} }} catch (e) {{ return String(e) }}"), {}, tools)
    assert text(caught) == '"InternalError: out of memory"'  # caught, it is the script's business


async def test_the_stack_is_limited(runner: ScriptRunner, tools: Tools) -> None:
    result = await runner.run(script("const f = (n) => f(n + 1) + 1; return f(0);", name="deep"), {}, tools)
    assert text(result) == "Custom tool 'deep' exceeded its stack limit of 256 KiB (recursion too deep?)"


async def test_there_is_no_file_network_process_or_module_access(runner: ScriptRunner, tools: Tools) -> None:
    source = """
    const names = ["std", "os", "require", "fetch", "XMLHttpRequest", "process", "Deno", "setTimeout", "print",
                   "__apimcp_call", "__apimcp_unlock", "__apimcp_body"];
    const seen = {};
    for (const n of names) seen[n] = typeof globalThis[n];
    let status = "pending";
    const loading = import("os").then(() => { status = "loaded"; }, () => { status = "refused"; });
    seen.importIsAPromise = loading instanceof Promise;
    seen.importStatus = status;
    return seen;
    """
    seen = (await runner.run(script(source), {}, tools)).structured_content
    assert seen.pop("importIsAPromise") is True
    assert seen.pop("importStatus") == "pending"  # no job ever runs: the module is never loaded
    assert set(seen.values()) == {"undefined"}, seen
    static = await runner.run(script("import * as os from 'os'; return 1", name="importer"), {}, tools)
    assert text(static).startswith("Custom tool 'importer' failed to compile: SyntaxError")


async def test_every_run_gets_a_fresh_context(runner: ScriptRunner, tools: Tools) -> None:
    polluter = "globalThis.leak = 1; Array.prototype.leaked = true; JSON.stringify = () => 'hijacked'; return 1"
    assert text(await runner.run(script(polluter), {}, tools)) == "1"
    probe = "return [typeof leak, [].leaked === undefined, JSON.stringify({a: 1})]"
    assert text(await runner.run(script(probe), {}, tools)) == '["undefined",true,"{\\"a\\":1}"]'


async def test_the_event_loop_keeps_running_during_a_busy_script(runner: ScriptRunner, tools: Tools) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.005)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    start = time.monotonic()
    result = await runner.run(
        script("const end = Date.now() + 200; let n = 0; while (Date.now() < end) n++; return 1"), {}, tools
    )
    elapsed = time.monotonic() - start
    ticking.cancel()
    assert text(result) == "1"
    print(f"event-loop ticks during a {elapsed * 1000:.0f} ms busy script: {ticks} (5 ms sleeps)")
    assert ticks >= 3  # up to about 38 in 200 ms, fewer on a busy machine; a blocked loop would tick once


async def test_async_calls_run_concurrently(runner: ScriptRunner, tools: Tools) -> None:
    source = """
    const handles = [];
    for (let i = 0; i < 5; i++) handles.push(rs.callToolAsync("sleep", {s: 0.05}));
    return rs.awaitPromises(handles).map((r) => r.content);
    """
    arrived: list[str] = []
    everyone = asyncio.Event()

    async def meeting(ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
        """Answers once all five calls are in: calls run one after another would never all arrive."""
        arrived.append(ref.tool)
        if len(arrived) == 5:
            everyone.set()
        await everyone.wait()
        return await tools(ref, arguments, depth)

    result = await runner.run(script(source, "sleep"), {}, meeting)
    assert orjson.loads(text(result)) == ["slept"] * 5


async def test_await_promises_checks_its_handles(runner: ScriptRunner, tools: Tools) -> None:
    source = """
    const h = rs.callToolAsync("echo", {n: 1});
    const twice = rs.awaitPromises([h, h]).map((r) => r.content.got.n);
    const errors = [];
    for (const bad of [h, [{}], [1]]) { try { rs.awaitPromises(bad); } catch (e) { errors.push(e.message); } }
    return {twice, errors};
    """
    seen = (await runner.run(script(source, "echo"), {}, tools)).structured_content
    assert seen["twice"] == [1, 1]
    assert seen["errors"] == [
        "rs.awaitPromises expects an array of rs.callToolAsync handles",
        "rs.awaitPromises: item 0 is not an rs.callToolAsync handle",
        "rs.awaitPromises: item 0 is not an rs.callToolAsync handle",
    ]
    assert len(tools.calls) == 1


async def test_calls_never_awaited_are_cancelled_when_the_script_ends(runner: ScriptRunner, tools: Tools) -> None:
    # The echo call after it lets the loop start the sleep first (else it would be cancelled before it began).
    source = "rs.callToolAsync('sleep', {s: 60}); rs.callTool('echo', {}); return 'done'"
    result = await runner.run(script(source, "sleep", "echo"), {}, tools)
    assert text(result) == '"done"'
    assert [ref.tool for ref, _, _ in tools.calls] == ["sleep", "echo"]
    for _ in range(2000):  # until the sleep is cancelled, long before its 60 s
        if tools.cancelled:
            break
        await asyncio.sleep(0.005)
    assert tools.cancelled == 1


async def test_a_cancelled_run_stops_its_calls_and_its_worker(tools: Tools) -> None:
    runner = ScriptRunner(replace(LIMITS, timeout_seconds=60))  # stopped by its cancellation, not its deadline
    try:
        run = asyncio.create_task(runner.run(script("rs.callTool('sleep', {s: 60})", "sleep"), {}, tools))
        for _ in range(1000):  # until the call is under way
            if tools.calls:
                break
            await asyncio.sleep(0.005)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        await until_idle(runner, within=10)  # long before the script's 60 s and its call's
        assert tools.cancelled == 1
    finally:
        runner.close()


async def test_a_cancelled_busy_loop_is_interrupted_whatever_its_time_left(tools: Tools) -> None:
    # Finding M1 of issue 21: the engine stopped on CPU time, so a cancelled run spun on until its budget (the
    # whole timeout, here a minute) ran out; the interrupt stops it now.
    runner = ScriptRunner(ScriptLimits(timeout_seconds=60))
    run = asyncio.create_task(runner.run(script("rs.callTool('echo', {}); while (true) {}", "echo"), {}, tools))
    await until_called(tools, 1)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await until_idle(runner, within=10.0)
    runner.close()


async def test_closing_the_runner_interrupts_the_scripts_it_runs(tools: Tools) -> None:
    runner = ScriptRunner(ScriptLimits(timeout_seconds=60))
    run = asyncio.create_task(runner.run(script("rs.callTool('echo', {}); while (true) {}", "echo"), {}, tools))
    await until_called(tools, 1)
    runner.close()
    await until_idle(runner, within=10.0)
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


async def test_a_full_pool_queues_then_refuses(tools: Tools) -> None:
    limits = ScriptLimits(workers=1, max_queued=1)
    runner = ScriptRunner(limits)
    slow = script("rs.callTool('sleep', {s: 0.1}); return input.n", "sleep", name="slow")
    opened = asyncio.Event()

    async def held(ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
        await opened.wait()  # the worker stays taken until the third run was refused
        return await tools(ref, arguments, depth)

    first = asyncio.create_task(runner.run(slow, {"n": 1}, held))
    await asyncio.sleep(0)  # it takes the worker
    second = asyncio.create_task(runner.run(slow, {"n": 2}, held))
    await asyncio.sleep(0)  # it waits for the worker
    with pytest.raises(McpError) as refused:
        await runner.run(slow, {"n": 3}, tools)
    assert refused.value.code == SERVER_BUSY
    assert refused.value.message == "Custom tool 'slow' cannot run now: all 1 script workers are busy"
    opened.set()
    assert [text(await first), text(await second)] == ["1", "2"]
    runner.close()


async def test_the_result_size_is_limited(tools: Tools) -> None:
    runner = ScriptRunner(ScriptLimits(max_result_bytes=1000))
    big = await runner.run(script("return 'x'.repeat(2000)", name="big"), {}, tools)  # refused in the engine
    assert text(big) == "Custom tool 'big' returned more JSON than its limit of 1000 bytes"
    wide = await runner.run(script("return 'é'.repeat(600)", name="wide"), {}, tools)  # 602 units, 1202 bytes
    assert text(wide) == "Custom tool 'wide' returned more JSON than its limit of 1000 bytes"
    fits = await runner.run(script("return 'é'.repeat(499)"), {}, tools)  # 1000 bytes
    assert not fits.is_error
    heavy_call = await runner.run(script("rs.callTool('echo', {s: 'x'.repeat(2000)})", "echo"), {}, tools)
    assert text(heavy_call) == "RangeError: the arguments of a tool call exceed 1000 bytes of JSON"
    assert tools.calls == []
    runner.close()


async def test_a_huge_result_is_refused_with_the_default_limits(tools: Tools) -> None:
    runner = ScriptRunner(ScriptLimits())
    twenty_mb = await runner.run(script("return 'x'.repeat(2e7)", name="big"), {}, tools)
    assert text(twenty_mb) == f"Custom tool 'big' returned more JSON than its limit of {10 * 2**20} bytes"
    hundred_mb = await runner.run(script("return 'x'.repeat(1e8)", name="big"), {}, tools)
    assert text(hundred_mb) == "Custom tool 'big' ran out of memory: it exceeded its memory limit of 64 MiB"
    runner.close()


async def test_values_that_are_not_json_are_refused(runner: ScriptRunner, tools: Tools) -> None:
    bigint = await runner.run(script("return 1n", name="odd"), {}, tools)
    assert text(bigint).startswith("Custom tool 'odd' returned a value that is not JSON: TypeError")
    cycle = await runner.run(script("const a = {}; a.a = a; return a", name="odd"), {}, tools)
    assert text(cycle).startswith("Custom tool 'odd' returned a value that is not JSON: TypeError")
    lone = await runner.run(script("return '\\ud800'", name="odd"), {}, tools)
    assert text(lone) == "Custom tool 'odd' returned a string that is not valid Unicode (a lone surrogate)"
    unjson = await runner.run(script("return 1"), {"s": {1, 2}}, tools)
    assert text(unjson) == "Custom tool 'probe' was given arguments that are not JSON"


async def test_a_run_beyond_the_depth_limit_is_refused(runner: ScriptRunner, tools: Tools) -> None:
    result = await runner.run(script("return 1", name="deep"), {}, tools, depth=LIMITS.max_depth + 1)
    assert result.is_error
    assert text(result).startswith("Custom tool 'deep' is nested too deeply")
    assert runner.running == 0


async def test_a_closed_runner_refuses_runs(tools: Tools) -> None:
    runner = ScriptRunner(LIMITS)
    runner.close()
    with pytest.raises(McpError, match="the script runner is closed") as refused:
        await runner.run(script("return 1"), {}, tools)
    assert refused.value.code == SERVER_BUSY


async def test_a_cancelled_inner_call_is_reported_to_the_script(runner: ScriptRunner, tools: Tools) -> None:
    async def cancelling(ref: ToolRef, arguments: object, depth: int) -> object:
        raise asyncio.CancelledError

    result = await runner.run(script("return rs.callTool('x', {}).error", "x"), {}, cancelling)  # type: ignore[arg-type]
    assert result.structured_content == {"code": REQUEST_CANCELLED, "message": "the call to tool 'x' was cancelled"}


async def test_a_script_s_tool_calls_run_in_the_context_of_its_request(runner: ScriptRunner) -> None:
    # What the request set (its span, say) is what its script's calls see, each in a copy of its own.
    request: contextvars.ContextVar[str] = contextvars.ContextVar("request", default="none")
    seen: list[str] = []

    async def invoke(ref: ToolRef, arguments: object, depth: int) -> CallToolResult:
        seen.append(request.get())
        request.set("changed by a call")
        return CallToolResult(content=(TextContent(text="{}"),))

    request.set("the request")
    source = "rs.callTool('a', {}); rs.awaitPromises([rs.callToolAsync('a', {}), rs.callToolAsync('a', {})])"
    await runner.run(script(source, "a"), {}, invoke)  # type: ignore[arg-type]
    assert seen == ["the request"] * 3
    assert request.get() == "the request"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the JSON texts Python parses from now on, in any thread."""
    sizes: list[int] = []
    loads = orjson.loads

    def spying(data: Any) -> Any:
        sizes.append(len(data))
        return loads(data)

    monkeypatch.setattr(orjson, "loads", spying)
    return sizes


async def test_a_large_script_result_stays_the_json_text_quickjs_returned(tools: Tools, parses: list[int]) -> None:
    # issue 21: its parse in the worker thread held the interpreter, the event loop's included, 150 ms for 10 MB
    runner = ScriptRunner(LIMITS, large_from_bytes=10_000)
    try:
        rows = await runner.run(script("return {rows: Array.from({length: 2000}, (_, i) => ({id: i}))};"), {}, tools)
        listed = await runner.run(script("return Array.from({length: 2000}, (_, i) => i);"), {}, tools)
        small = await runner.run(script("return {rows: [1]};"), {}, tools)
    finally:
        runner.close()
    assert isinstance(rows.structured_content, RawJson)
    assert rows.structured_content.data == text(rows).encode()
    assert orjson.loads(rows.structured_content.data) == {"rows": [{"id": i} for i in range(2000)]}
    assert listed.structured_content is NO_VALUE  # as before: only an object is structured content
    assert small.structured_content == {"rows": [1]}  # small ones are parsed, as before
    assert max(parses[:-1]) < 10_000  # (the last parse is this test's own)


async def test_a_large_result_with_a_lone_surrogate_is_refused_as_before(tools: Tools) -> None:
    runner = ScriptRunner(LIMITS, large_from_bytes=1000)
    try:
        result = await runner.run(script("return {pad: 'x'.repeat(2000), bad: '\\ud800'};"), {}, tools)
    finally:
        runner.close()
    assert result.is_error and "not valid Unicode" in text(result)


async def test_a_serialized_result_reaches_the_script_without_a_parse_in_python(
    runner: ScriptRunner, tools: Tools, parses: list[int]
) -> None:
    source = "const r = rs.callTool('raw', {}); return {count: r.content.rows.length, last: r.content.rows.at(-1)};"
    result = await runner.run(script(source, "raw"), {}, tools)
    assert result.structured_content == {"count": 20000, "last": {"id": 19999}}
    assert max(parses) < len(RAW_ROWS) // 10


async def test_awaiting_one_call_many_times_is_bounded(runner: ScriptRunner, tools: Tools) -> None:
    """The finding: `rs.awaitPromises` took a list of any length, repeats included, and wrote each entry's result
    anew: a 200 KB result awaited a million times kept the gateway's worker busy 27 s past the run's deadline.
    Now a list holds at most as many promises as a run may start calls, and a call waited for twice is written
    once."""
    source = """
    const h = rs.callToolAsync("echo", {n: 1});
    const some = rs.awaitPromises(Array(50).fill(h)).length;
    try { rs.awaitPromises(Array(51).fill(h)); return "accepted"; } catch (e) { return [some, e.message]; }
    """
    seen = orjson.loads(text(await runner.run(script(source, "echo"), {}, tools)))
    assert seen == [50, "rs.awaitPromises takes at most 50 promises (a run's calls)"]
