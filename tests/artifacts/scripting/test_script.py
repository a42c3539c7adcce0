from __future__ import annotations

from typing import Any

import pytest

from apimcp.artifacts.scripting import Script, ScriptLimits, ScriptSpecError, ToolRef


def test_a_spec_gives_the_source_and_the_allow_list() -> None:
    spec = {
        "description": "ignored here",
        "script": "return 1",
        "tools": [{"tool": "get_user"}, {"tool": "search", "service": "Other Service:1.0"}, {"tool": "get_user"}],
    }
    script = Script.from_spec("user_with_repos", spec)
    assert script.tool_name == "user_with_repos"
    assert script.source == "return 1"
    assert script.allowed == {ToolRef(None, "get_user"), ToolRef("Other Service:1.0", "search")}
    assert Script.from_spec("t", {"script": "return 1"}).allowed == frozenset()
    assert str(ToolRef("Other Service:1.0", "search")) == "tool 'search' of service 'Other Service:1.0'"


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ({"tools": []}, "script must be non-empty JavaScript"),
        ({"script": "  ", "tools": []}, "script must be non-empty JavaScript"),
        ({"script": "return '\udc80'", "tools": []}, "script is not valid Unicode"),
        ({"script": "return 1", "tools": "get_user"}, "tools must be a list"),
        ({"script": "return 1", "tools": ["get_user"]}, "tools[0] must be a mapping"),
        ({"script": "return 1", "tools": [{"tool": ""}]}, "tools[0].tool must be a non-empty string"),
        ({"script": "return 1", "tools": [{"tool": "a"}, {"tool": "b", "service": "Other"}]}, "tools[1].service"),
        ({"script": "return 1", "tools": [{"tool": "b", "service": 3}]}, "tools[0].service must be 'Name:version'"),
    ],
)
def test_a_bad_spec_is_refused_with_its_place(spec: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ScriptSpecError, match=r"custom tool 'x'") as raised:
        Script.from_spec("x", spec)
    assert complaint in str(raised.value)


@pytest.mark.parametrize(
    "wrong",
    [
        {"timeout_seconds": 0},
        {"memory_bytes": 1000},
        {"stack_bytes": 1000},
        {"max_calls": -1},
        {"max_depth": -1},
        {"max_result_bytes": 0},
        {"workers": 0},
        {"max_queued": -1},
    ],
)
def test_limits_refuse_values_that_cannot_work(wrong: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(wrong))):
        ScriptLimits(**wrong)  # type: ignore[arg-type]
