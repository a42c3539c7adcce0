"""The cyclic collector paused for JSON work: counted across threads, never for long, never turned back on
when someone else turned it off."""

from __future__ import annotations

import gc
import threading

import pytest

from apimcp.safety import collector
from apimcp.safety.collector import collector_paused


def test_the_collector_resumes_when_the_last_pauser_is_done() -> None:
    first_in, second_done, first_may_leave = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with collector_paused():
            first_in.set()
            first_may_leave.wait(5)

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with collector_paused():
        assert not gc.isenabled()
    second_done.set()
    assert not gc.isenabled()  # the first pauser is still in
    first_may_leave.set()
    thread.join(5)
    assert gc.isenabled()


def test_a_pause_cannot_be_joined_once_it_is_old(monkeypatch: pytest.MonkeyPatch) -> None:
    with collector_paused():
        monkeypatch.setattr(collector._PAUSE, "since", collector._PAUSE.since - collector.MAX_PAUSE_SECONDS)
        with collector_paused():
            assert collector._PAUSE.holders == 1  # not joined: this work goes on with the collector once it resumes
    assert gc.isenabled()


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
