"""Pins the quickjs-ng binding behaviour `engine.Context.run` relies on and works around."""

from __future__ import annotations

import time

import pytest
import quickjs  # type: ignore[import-untyped]

from apimcp.artifacts.scripting import engine


def test_the_binding_alone_refuses_host_calls_under_a_time_limit() -> None:
    # Why engine.Context.run exists; if this starts failing, the workaround may be retired.
    context = quickjs.Context()
    context.add_callable("host", lambda: "hi")
    context.set_time_limit(1)
    with pytest.raises(quickjs.JSException, match="Can not call into Python with a time limit set"):
        context.eval("host()")


def test_run_allows_host_calls_and_still_interrupts_a_loop() -> None:
    context = engine.Context(memory_bytes=8 * 2**20, stack_bytes=256 * 2**10)
    seen: list[str] = []

    def host(text: str) -> str:
        seen.append(text)
        return "pong"

    context.expose("host", host, "fallback")
    start = time.monotonic()
    with pytest.raises(engine.JSException, match="interrupted"):
        context.run("globalThis.answer = host('ping'); while (true) {}", cpu_seconds=0.2)
    assert 0.15 < time.monotonic() - start < 10  # timing-ok: a CPU-time limit, so far more wall time on a busy machine
    assert seen == ["ping"]
    assert context.host_calls_allowed
    with pytest.raises(RuntimeError, match="evaluates once"):
        context.run("1", cpu_seconds=1)
    context.close()


def test_a_host_function_that_fails_answers_its_fallback() -> None:
    context = engine.Context(memory_bytes=8 * 2**20, stack_bytes=256 * 2**10)

    def broken(_: str) -> str:
        raise ValueError("bug")

    context.expose("host", broken, "fallback")
    assert context.run("host('x') + ' ' + host(1) + ' ' + host()", cpu_seconds=1) == "fallback fallback fallback"
    context.close()


def test_contexts_have_no_module_loader() -> None:
    # The sandbox never runs pending jobs, so import() cannot even start; pumped here, it is refused.
    context = quickjs.Context()
    context.eval(
        "globalThis.seen = 'pending'; import('os').then(() => { seen = 'loaded' }, (e) => { seen = String(e) })"
    )
    while context.execute_pending_job():
        pass
    assert "could not load module" in context.eval("seen").lower()
