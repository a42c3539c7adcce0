"""Scripts run in child processes: a built-in that never checks the interrupt ends with its process.

The finding closed here (issue 21, docs/security.md): a few QuickJS built-ins loop in C without checking the
engine's interrupt, so a script stuck in one kept its worker thread (and a core) busy long after its deadline,
and enough of them held every worker place.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import time
from pathlib import Path

import pytest

from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from apimcp.artifacts.scripting.processes import ScriptProcess
from apimcp.protocol.errors import SERVER_BUSY, McpError
from tests.artifacts.scripting.support import Tools, script, text, until_idle

pytestmark = pytest.mark.anyio

WORKERS = 2
STUCK = script("const a = []; a.length = 2 ** 31; return a.join(',');", name="stuck")
"""About 40 s in one call of a C loop that never checks the interrupt."""
TRIVIAL = script("return 'ok';", name="trivial")
SPIN = script("while (true) {}", name="spin")


def _alive(pid: int) -> bool:
    """Whether `pid` is a process (running or not yet reaped)."""
    return Path(f"/proc/{pid}").exists()


def _proc(pid: int, name: str) -> bytes:
    return Path(f"/proc/{pid}/{name}").read_bytes()


def _runner(timeout_seconds: float, exposition_workers: int = WORKERS) -> ScriptRunner:
    limits = ScriptLimits(
        timeout_seconds=timeout_seconds,
        memory_bytes=16 * 2**20,
        max_depth=0,
        workers=WORKERS,
        exposition_workers=exposition_workers,
        max_queued=3 * WORKERS,
    )
    return ScriptRunner(limits)


async def test_a_script_stuck_in_a_c_builtin_is_answered_at_its_deadline_its_process_killed() -> None:
    tools = Tools()
    runner = _runner(timeout_seconds=2)
    try:
        stuck_pids: set[int] = set()
        for _ in range(3):  # 3 x WORKERS stuck runs: before, the third batch found every place held
            batch = [asyncio.create_task(runner.run(STUCK, {}, tools)) for _ in range(WORKERS)]
            await asyncio.sleep(1)
            stuck_pids.update(runner.pids)
            results = await asyncio.gather(*batch)
            assert [text(result) for result in results] == ["Custom tool 'stuck' timed out after 2 s"] * WORKERS
        # at once: no place waits for a stuck thread, WORKERS + 1 runs all answer within their deadline
        quick = await asyncio.gather(*(runner.run(TRIVIAL, {}, tools) for _ in range(WORKERS + 1)))
        assert [text(result) for result in quick] == ['"ok"'] * (WORKERS + 1)
        await until_idle(runner, within=10)
        assert len(stuck_pids) >= 3 * WORKERS
        assert not any(_alive(pid) for pid in stuck_pids)  # killed and reaped
    finally:
        runner.close()


async def test_stuck_scripts_of_one_exposition_leave_another_its_scripts() -> None:
    tools = Tools()
    runner = _runner(timeout_seconds=2, exposition_workers=WORKERS - 1)
    try:
        flood = [asyncio.create_task(runner.run(STUCK, {}, tools, share="A")) for _ in range(3 * WORKERS)]
        answers = []
        while not all(task.done() for task in flood):
            answers.append(text(await runner.run(TRIVIAL, {}, tools, share="B")))
            await asyncio.sleep(0.1)
        flooded = await asyncio.gather(*flood, return_exceptions=True)
        assert answers and set(answers) == {'"ok"'}
        assert all(
            (isinstance(outcome, McpError) and outcome.code == SERVER_BUSY)  # waited past its deadline
            or text(outcome) == "Custom tool 'stuck' timed out after 2 s"
            for outcome in flooded
        )
    finally:
        runner.close()


async def test_a_script_process_killed_mid_run_is_a_clear_error_and_the_next_run_gets_a_new_one() -> None:
    tools = Tools()
    runner = _runner(timeout_seconds=30)
    try:
        running = asyncio.create_task(runner.run(SPIN, {}, tools))
        await asyncio.sleep(0.5)
        (pid,) = runner.pids
        os.kill(pid, signal.SIGKILL)
        result = await running
        assert result.is_error
        assert text(result) == "Custom tool 'spin' could not run: the script process ended unexpectedly"
        assert text(await runner.run(TRIVIAL, {}, tools)) == '"ok"'
        assert pid not in runner.pids
        assert len(runner.pids) == 1
    finally:
        runner.close()


async def test_a_script_process_inherits_no_gateway_variable_runs_niced_with_its_data_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APIMCP_TEST_SECRET", "hunter2")
    tools = Tools()
    runner = _runner(timeout_seconds=10)
    try:
        assert text(await runner.run(TRIVIAL, {}, tools)) == '"ok"'  # the process is up, its limits set
        (pid,) = runner.pids
        environ = _proc(pid, "environ")
        assert b"APIMCP_TEST_SECRET" not in environ
        assert b"hunter2" not in environ
        assert [entry.partition(b"=")[0] for entry in environ.split(b"\0") if entry] == [b"PYTHONPATH"]
        nice = int(_proc(pid, "stat").rpartition(b")")[2].split()[16])
        assert nice >= 10 + os.nice(0)
        (line,) = [line for line in _proc(pid, "limits").decode().splitlines() if "Max data size" in line]
        limits = runner.limits
        stack = max(8 * 2**20, limits.stack_bytes + 4 * 2**20)
        assert line.split()[3:5] == [str(limits.memory_bytes + stack + limits.process_overhead_bytes)] * 2
    finally:
        runner.close()


async def test_closing_the_runner_leaves_no_script_process_alive() -> None:
    tools = Tools()
    runner = _runner(timeout_seconds=30)
    spinning = asyncio.create_task(runner.run(SPIN, {}, tools))
    assert text(await runner.run(TRIVIAL, {}, tools)) == '"ok"'
    await asyncio.sleep(0.3)
    pids = runner.pids
    assert len(pids) == 2  # one spinning, one idle
    runner.close()
    result = await spinning
    assert text(result) == "The gateway is stopping"
    assert not any(_alive(pid) for pid in pids)
    assert runner.pids == []


async def test_a_runner_dropped_without_close_leaves_no_script_process_alive() -> None:
    # a runtime never shut down (a test, a bug) used to leave its started process running, unreaped
    runner = _runner(timeout_seconds=30)
    assert text(await runner.run(TRIVIAL, {}, Tools())) == '"ok"'
    pids = runner.pids
    assert pids
    del runner
    # its last worker thread lets go of the run a moment after the caller was answered: collect until then
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in pids):
        assert time.monotonic() < deadline, "a dropped runner's script process outlived it"  # timing-ok: a guard
        gc.collect()
        await asyncio.sleep(0.05)


def test_a_script_process_exits_when_its_input_ends() -> None:
    process = ScriptProcess(data_bytes=512 * 2**20, stack_bytes=8 * 2**20)
    process.stdin.close()  # as when the gateway dies
    assert process.popen.wait(timeout=30) == 0
    process.close_pipes()


async def test_a_script_that_heeds_its_interrupt_keeps_its_process_for_the_next_run() -> None:
    tools = Tools()
    runner = _runner(timeout_seconds=0.5)
    try:
        (pid,) = runner.pids
        assert text(await runner.run(SPIN, {}, tools)) == "Custom tool 'spin' timed out after 0.5 s"
        await until_idle(runner, within=10)
        assert text(await runner.run(TRIVIAL, {}, tools)) == '"ok"'
        assert runner.pids == [pid]  # interrupted within its grace: no new interpreter to start
    finally:
        runner.close()
