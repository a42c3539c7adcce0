from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from tests.artifacts.scripting.support import Tools

LIMITS = ScriptLimits(timeout_seconds=10, memory_bytes=16 * 2**20)
"""A deadline no script reaches by accident on a busy machine: a test of another limit must not race it."""
SHORT = replace(LIMITS, timeout_seconds=0.3)
"""For the tests of the deadline itself."""


@pytest.fixture
def runner() -> Iterator[ScriptRunner]:
    runner = ScriptRunner(LIMITS)
    yield runner
    runner.close()


@pytest.fixture
def short_runner() -> Iterator[ScriptRunner]:
    runner = ScriptRunner(SHORT)
    yield runner
    runner.close()


@pytest.fixture
def tools(runner: ScriptRunner) -> Tools:
    tools = Tools()
    tools.runner = runner
    return tools
