"""Code-mode programs in the sandbox: an async body given `tools`, its calls awaited, in parallel when started
together; errors naming the program's line; the program's value as the one result."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from apimcp.artifacts.scripting import ScriptRunner, ToolRef
from apimcp.protocol.context import InputRequired
from apimcp.protocol.errors import UrlElicitationRequired
from tests.artifacts.scripting.conftest import LIMITS
from tests.artifacts.scripting.support import Tools, program, script, text, until_called, until_idle

pytestmark = pytest.mark.anyio


async def test_awaited_calls_give_structured_content_else_json_text_else_text(
    runner: ScriptRunner, tools: Tools
) -> None:
    result = await runner.run(
        program(
            "const echoed = await tools.echo({a: 1});\n"
            "const listed = await tools.json_text();\n"
            "const said = await tools.plain_text({});\n"
            "return {echoed, listed, said};"
        ),
        {},
        tools,
    )
    assert not result.is_error
    assert result.structured_content == {"echoed": {"got": {"a": 1}}, "listed": [1, "two"], "said": "just words"}
    assert [(ref.tool, args) for ref, args, _ in tools.calls] == [("echo", {"a": 1}), ("json_text", {}),
                                                                  ("plain_text", {})]  # fmt: skip
    assert {depth for _, _, depth in tools.calls} == {1}
    assert all(ref.service is None for ref, _, _ in tools.calls)


async def test_calls_started_together_run_in_parallel(runner: ScriptRunner, tools: Tools) -> None:
    source = "const all = await Promise.all([tools.hold(), tools.hold(), tools.hold()]);\nreturn all;"
    running = asyncio.create_task(runner.run(program(source), {}, tools))
    await until_called(tools, 3)  # all three are under way while none has ended
    assert not running.done()
    tools.let_go.set()
    result = await running
    assert json.loads(text(result)) == ["let go"] * 3


async def test_a_value_that_is_not_a_promise_of_a_call_may_be_awaited_too(runner: ScriptRunner, tools: Tools) -> None:
    source = "const a = await 1;\nconst b = await new Promise((ok) => ok(a + 1));\nreturn [a, b, await tools.echo({})];"
    assert json.loads(text(await runner.run(program(source), {}, tools))) == [1, 2, {"got": {}}]


async def test_a_tool_error_throws_where_the_program_called_it(runner: ScriptRunner, tools: Tools) -> None:
    source = "const ok = await tools.echo({});\n\nconst bad = await tools.error_result({id: 7});\nreturn bad;"
    result = await runner.run(program(source), {}, tools)
    assert result.is_error
    assert text(result) == 'The program failed at line 3: tools.error_result failed: {"reason": "nope"}'


async def test_a_program_may_catch_a_tool_error_and_read_what_failed(runner: ScriptRunner, tools: Tools) -> None:
    source = """
try {
  await tools.invalid({});
} catch (error) {
  return {tool: error.tool, code: error.code, line: error.line, message: error.message};
}"""
    result = await runner.run(program(source), {}, tools)
    assert result.structured_content == {
        "tool": "invalid", "code": -32602, "line": 3, "message": "tools.invalid failed: login is required",
    }  # fmt: skip


async def test_an_unknown_tool_and_a_crash_inside_the_gateway_are_tool_errors(
    runner: ScriptRunner, tools: Tools
) -> None:
    result = await runner.run(program("await tools.nothing_here({});"), {}, tools)
    assert text(result) == "The program failed at line 1: tools.nothing_here failed: Unknown tool: nothing_here"
    result = await runner.run(program("\nawait tools.crash({});"), {}, tools)
    assert text(result) == (
        "The program failed at line 2: tools.crash failed: the call to tool 'crash' failed with an internal error"
    )
    assert "secret internal detail" not in text(result)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("const a = 1;\nnull.x;", "The program failed at line 2: TypeError: cannot read property 'x' of null"),
        ("\n\nthrow new Error('boom');", "The program failed at line 3: boom"),
        ("function f() {\n  throw new RangeError('deep');\n}\nf();", "The program failed at line 2: RangeError: deep"),
        ("throw 'a string';", "The program failed: a string"),
        ("await Promise.reject(new Error('no'));", "The program failed at line 1: no"),
    ],
)
async def test_an_uncaught_error_names_the_line_of_the_program(
    runner: ScriptRunner, tools: Tools, source: str, expected: str
) -> None:
    result = await runner.run(program(source), {}, tools)
    assert result.is_error
    assert text(result) == expected


async def test_a_syntax_error_names_its_line(runner: ScriptRunner, tools: Tools) -> None:
    result = await runner.run(program("const a = 1;\nconst b = ;"), {}, tools)
    assert result.is_error
    assert text(result).startswith("The program failed to compile: SyntaxError")
    assert text(result).endswith("(line 2, column 11)")


@pytest.mark.parametrize("body", ["}); (async function () {", "}\n(async function () {"])
async def test_the_body_cannot_escape_its_function(runner: ScriptRunner, tools: Tools, body: str) -> None:
    result = await runner.run(program(body), {}, tools)
    assert result.is_error
    assert text(result).startswith("The program failed to compile")


async def test_a_program_waiting_on_nothing_ends_at_once(runner: ScriptRunner, tools: Tools) -> None:
    result = await runner.run(program("await new Promise(() => {});\nreturn 1;"), {}, tools)
    assert text(result) == "The program waits for a promise that nothing settles (no tool call is under way)"


@pytest.mark.parametrize("loop", ["for (;;) {}", "for (;;) { await null; }", "for (;;) { await tools.echo({}); }"])
async def test_an_endless_program_stops_at_its_deadline(loop: str) -> None:
    runner = ScriptRunner(replace(LIMITS, timeout_seconds=0.5, max_calls=10**6))
    tools = Tools()
    try:
        result = await runner.run(program(loop), {}, tools)
        assert result.is_error
        assert text(result) == "The program timed out after 0.5 s"
        await until_idle(runner, within=10)
        assert text(await runner.run(program("return 'next';"), {}, tools)) == '"next"'
    finally:
        runner.close()


async def test_the_calls_of_a_run_are_counted(runner: ScriptRunner, tools: Tools) -> None:
    limits = replace(LIMITS, max_calls=3)
    source = "for (let i = 0; i < 5; i++) await tools.echo({i});"
    result = await runner.run(program(source), {}, tools, limits=limits)
    assert text(result) == "The program failed at line 1: The program may make at most 3 tool calls per run"
    assert len(tools.calls) == 3


async def test_a_run_s_own_limits_replace_the_runner_s(runner: ScriptRunner, tools: Tools) -> None:
    small = replace(LIMITS, max_result_bytes=100)
    result = await runner.run(program("return 'x'.repeat(200);"), {}, tools, limits=small)
    assert text(result) == "The program returned more JSON than its limit of 100 bytes"
    with pytest.raises(ValueError, match="memory and stack"):
        await runner.run(program("return 1;"), {}, tools, limits=replace(LIMITS, memory_bytes=LIMITS.memory_bytes * 2))


async def test_what_the_program_returns_is_the_result(runner: ScriptRunner, tools: Tools) -> None:
    assert text(await runner.run(program("return [1, 'two'];"), {}, tools)) == '[1,"two"]'
    assert text(await runner.run(program("const x = 1;"), {}, tools)) == "null"
    result = await runner.run(program("return {a: () => 1, b: 2};"), {}, tools)
    assert result.structured_content == {"b": 2}
    result = await runner.run(program("const o = {}; o.o = o; return o;"), {}, tools)
    assert result.is_error
    assert text(result).startswith("The program returned a value that is not JSON")


async def test_calls_never_awaited_are_cancelled_when_the_program_ends(runner: ScriptRunner, tools: Tools) -> None:
    # the echo awaited after it lets the un-awaited call start first (ending at once, the program could end before
    # the host started it, and a call never started is never cancelled: CI under load saw that)
    result = await runner.run(program("tools.sleep({s: 30});\nawait tools.echo({});\nreturn 'done';"), {}, tools)
    assert text(result) == '"done"'
    for _ in range(200):
        if tools.cancelled:
            break
        await asyncio.sleep(0.01)
    assert tools.cancelled == 1


@pytest.mark.parametrize(("tool", "raised"), [("needs_credential", UrlElicitationRequired),
                                              ("needs_input", InputRequired)])  # fmt: skip
async def test_a_call_that_needs_the_user_first_stops_the_program_and_reaches_its_caller(
    runner: ScriptRunner, tools: Tools, tool: str, raised: type[Exception]
) -> None:
    source = f"await tools.echo({{}});\ntry {{ await tools.{tool}({{}}); }} catch (e) {{}}\nreturn 1;"
    with pytest.raises(raised):
        await runner.run(program(source), {}, tools)
    assert [ref for ref, _, _ in tools.calls][:2] == [ToolRef(None, "echo"), ToolRef(None, tool)]
    await until_idle(runner, within=10)


async def test_a_scripted_tool_s_call_that_needs_the_user_reaches_its_caller_too(
    runner: ScriptRunner, tools: Tools
) -> None:
    with pytest.raises(UrlElicitationRequired):
        await runner.run(script("return rs.callTool('needs_credential', {});", "needs_credential"), {}, tools)


async def test_nothing_of_the_host_leaks_into_the_program(runner: ScriptRunner, tools: Tools) -> None:
    source = (
        "return [typeof rs, typeof input, typeof __apimcp_next, typeof __apimcp_drain, typeof __apimcp_start,\n"
        "        typeof tools.then, Object.keys(globalThis).filter((k) => k.startsWith('__apimcp'))];"
    )
    assert json.loads(text(await runner.run(program(source), {}, tools))) == ["undefined"] * 6 + [[]]
