"""Pins the quickjs-ng binding behaviour `engine.Context.run` relies on and works around."""

from __future__ import annotations

import threading
import time

import pytest
import quickjs  # type: ignore[import-untyped]

from apimcp.script_engine import engine, interrupt


def test_the_binding_alone_refuses_host_calls_under_a_time_limit() -> None:
    # Why engine.Context.run exists; if this starts failing, the workaround may be retired.
    context = quickjs.Context()
    context.add_callable("host", lambda: "hi")
    context.set_time_limit(1)
    with pytest.raises(quickjs.JSException, match="Can not call into Python with a time limit set"):
        context.eval("host()")


def test_the_binding_s_armed_budget_is_found_and_zeroing_it_stops_a_loop() -> None:
    # Why interrupt.py can stop a script at its wall-clock deadline; if this fails, scripts fall back to the
    # binding's CPU budget (and the tests below fail too).
    assert interrupt.BUDGET_OFFSET is not None and engine.INTERRUPTIBLE
    context = quickjs.Context()
    context.set_time_limit(1e9)  # armed, but out of reach
    ended: list[str] = []

    def loop() -> None:
        with pytest.raises(quickjs.JSException, match="interrupted") as stopped:
            context.eval("globalThis.started = true; while (true) {}")
        ended.append(str(stopped.value))

    thread = threading.Thread(target=loop)
    thread.start()
    give_up = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < give_up:
        interrupt.stop_now(context)  # again until it lands after the start (which copies the setting over it)
        thread.join(0.02)
    assert not thread.is_alive() and ended


def test_interrupt_stops_a_running_loop_from_another_thread_whatever_its_cpu_budget() -> None:
    context = engine.Context(memory_bytes=8 * 2**20, stack_bytes=256 * 2**10)
    seen: list[str] = []
    outcome: list[BaseException] = []

    def host(text: str) -> str:
        seen.append(text)
        return "pong"

    context.expose("host", host, "fallback")
    looping = threading.Event()
    context.expose("looping", lambda _: looping.set() or "", "fallback")

    def run() -> None:
        try:
            context.run("host('ping'); looping(''); while (true) {}", cpu_seconds=0.001)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert looping.wait(10)
    context.interrupt()
    thread.join(10)
    assert not thread.is_alive()
    (stopped,) = outcome
    assert isinstance(stopped, engine.JSException) and str(stopped).startswith("InternalError: interrupted")
    assert seen == ["ping"]
    assert context.host_calls_allowed  # host calls went through with the interrupt armed
    with pytest.raises(RuntimeError, match="evaluates once"):
        context.run("1", cpu_seconds=1)
    context.close()
    context.interrupt()  # after close: nothing to stop, nothing touched


def test_an_interrupt_before_the_evaluation_stops_it_as_soon_as_it_starts() -> None:
    context = engine.Context(memory_bytes=8 * 2**20, stack_bytes=256 * 2**10)
    context.interrupt()
    with pytest.raises(engine.JSException, match="interrupted"):
        context.run("while (true) {}", cpu_seconds=1e6)
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
