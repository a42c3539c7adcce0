from __future__ import annotations

from collections.abc import Iterator

import pytest

from apimcp.artifacts.scripting import ScriptLimits, ScriptRunner
from tests.artifacts.scripting.support import Tools

LIMITS = ScriptLimits(timeout_seconds=0.3, memory_bytes=16 * 2**20)


@pytest.fixture
def runner() -> Iterator[ScriptRunner]:
    runner = ScriptRunner(LIMITS)
    yield runner
    runner.close()


@pytest.fixture
def tools(runner: ScriptRunner) -> Tools:
    tools = Tools()
    tools.runner = runner
    return tools
