"""The host functions a script's engine calls, driven from a worker thread as the engine drives them: each call a
program starts keeps a handle of its own, and the arguments' bound is counted in bytes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from apimcp.artifacts.scripting.host import Host
from apimcp.artifacts.scripting.limits import ScriptLimits
from apimcp.artifacts.scripting.script import Script, ToolRef
from apimcp.protocol import CallToolResult
from apimcp.protocol.models import TextContent

pytestmark = pytest.mark.anyio


def _host(limits: ScriptLimits, gates: Mapping[str, asyncio.Event] | None = None) -> Host:
    async def invoke(ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
        if gates is not None:
            await gates[ref.tool].wait()
        return CallToolResult(content=(TextContent(text=ref.tool),))

    program = Script("execute_code", "", None, kind="program", label="The program")
    return Host(program, limits, invoke, 0, asyncio.get_running_loop(), time.monotonic() + 10)


def _request(tool: str, arguments: Mapping[str, Any]) -> str:
    return orjson.dumps([None, tool, arguments]).decode()


async def test_a_call_started_after_another_ended_gets_a_handle_no_call_under_way_has() -> None:
    gates = {tool: asyncio.Event() for tool in "abc"}
    host = _host(ScriptLimits(), gates)

    async def start(tool: str) -> int:
        status, handle = orjson.loads(await asyncio.to_thread(host.start, _request(tool, {})))
        assert status == 0
        return int(handle)

    a, b = await start("a"), await start("b")
    gates["a"].set()
    status, ended = orjson.loads(await asyncio.to_thread(host.next, orjson.dumps([a, b]).decode()))
    assert status == 0 and [handle for handle, _ in ended] == [a]  # b is still under way
    c = await start("c")
    assert c not in (a, b)
    gates["b"].set()
    gates["c"].set()
    status, ended = orjson.loads(await asyncio.to_thread(host.next, orjson.dumps([b]).decode()))
    assert status == 0 and [handle for handle, _ in ended] == [b]
    assert '"b"' in orjson.dumps(ended).decode()  # b's own outcome, not c's


async def test_the_bound_on_a_call_s_arguments_is_in_bytes() -> None:
    host = _host(ScriptLimits(max_result_bytes=2000))
    wide = _request("a", {"text": "中" * 900})  # 935 characters, 2,735 bytes of UTF-8
    status, message = orjson.loads(await asyncio.to_thread(host.start, wide))
    assert status != 0 and "exceed 2000 bytes of JSON" in message
    assert "tools.<name>" in message  # a program's calls are named as a program writes them
    status, _ = orjson.loads(await asyncio.to_thread(host.start, _request("a", {"text": "a" * 1900})))
    assert status == 0
    host.stop("done")


async def test_what_a_script_receives_at_once_stays_within_half_its_memory() -> None:
    """The finding: every ended call's whole result was written into one answer for the script, in the gateway's
    memory, whatever the script could hold: a program waiting for a hundred calls of 10 MiB made an answer of a GB."""
    big = "x" * (3 * 2**20 // 2)

    async def invoke(ref: ToolRef, arguments: Mapping[str, Any], depth: int) -> CallToolResult:
        return CallToolResult(content=(TextContent(text=big),))

    program = Script("execute_code", "", None, kind="program", label="The program")
    limits = ScriptLimits(memory_bytes=4 * 2**20)
    host = Host(program, limits, invoke, 0, asyncio.get_running_loop(), time.monotonic() + 10)
    handles = [orjson.loads(await asyncio.to_thread(host.start, _request(tool, {})))[1] for tool in "abc"]
    await asyncio.sleep(0.1)  # all three end
    answer = await asyncio.to_thread(host.next, orjson.dumps(handles).decode())
    assert len(answer) < limits.memory_bytes // 2 + 1000
    status, ended = orjson.loads(answer)
    outcomes = [outcome for _, outcome in ended]
    assert status == 0 and len(outcomes) == 3
    assert outcomes[0]["ok"] and outcomes[0]["content"] == big
    for refused in outcomes[1:]:
        assert not refused["ok"] and refused["content"] is None
        assert refused["error"]["message"].startswith("the result of ")
        assert "more than the script can take in at once (2,097,152: half its memory)" in refused["error"]["message"]
    host.stop("done")
