"""execute_code's arguments, the `code_mode` setting and code mode's limits: what is refused, and how it says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apimcp.codemode.limits import CodeModeLimits
from apimcp.codemode.program import ProgramError, execute_tool, program
from apimcp.codemode.setting import CodeModeSettingError, parse_code_mode
from apimcp.gateway.config import ConfigError, parse_config
from tests.gateway.conftest import ECHO_SPEC

LIMITS = CodeModeLimits(max_code_bytes=64)


def test_a_program_is_the_code_given() -> None:
    script = program({"code": "return 1;"}, LIMITS)
    assert (script.source, script.kind, script.allowed, script.subject) == ("return 1;", "program", None,
                                                                            "The program")  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "told"),
    [
        ({}, '"code" must be the JavaScript of the program (the body of an async function)'),
        ({"code": "   "}, '"code" must be the JavaScript of the program (the body of an async function)'),
        ({"code": 42}, '"code" must be the JavaScript of the program (the body of an async function)'),
        ({"code": "x" * 65}, '"code" is longer than 64 bytes'),
        ({"code": "\ud800"}, '"code" is not valid Unicode'),
        ({"code": "return 1;", "input": {}}, "execute_code takes only \"code\", not 'input'"),
    ],
)
def test_arguments_that_are_no_program_are_refused_saying_why(arguments: dict[str, Any], told: str) -> None:
    with pytest.raises(ProgramError) as refused:
        program(arguments, LIMITS)
    assert str(refused.value) == told


def test_execute_code_states_its_limits_and_whether_it_changes_anything() -> None:
    tool = execute_tool(CodeModeLimits(timeout_seconds=5, max_calls=7), read_only=True)
    assert tool.description is not None
    assert "5 s, 7 tool calls, 1048576 bytes of result" in tool.description
    assert "Only tools that change nothing can be called." in tool.description
    assert tool.input_schema["properties"]["code"]["maxLength"] == 100_000
    assert tool.annotations is not None and tool.annotations.read_only_hint is True


@pytest.mark.parametrize(("value", "setting"), [(None, "off"), (False, "off"), (True, "on"), ("on", "on"),
                                                ("read_only", "read_only"), ("off", "off")])  # fmt: skip
def test_the_setting_reads_booleans_and_its_names(value: object, setting: str) -> None:
    assert parse_code_mode(value) == setting


@pytest.mark.parametrize("value", ["yes", "ON", 1, "readonly"])
def test_any_other_setting_is_refused_naming_the_choices(value: object) -> None:
    with pytest.raises(CodeModeSettingError, match=r"code_mode is one of off, on, read_only \(or true/false\)"):
        parse_code_mode(value)


def test_a_configuration_file_s_code_mode_is_checked_where_it_is_written(tmp_path: Path) -> None:
    text = (
        f"services:\n  echo: {{openapi: {ECHO_SPEC}}}\nexpositions:\n  e:\n    services: [echo]\n    code_mode: maybe\n"
    )
    with pytest.raises(ConfigError) as refused:
        parse_config(text, "gateway.yaml", tmp_path)
    assert "gateway.yaml:6" in str(refused.value) and "code_mode is one of" in str(refused.value)
    accepted = parse_config(text.replace("maybe", "read_only"), "gateway.yaml", tmp_path)
    assert accepted.expositions["e"].code_mode == "read_only"


@pytest.mark.parametrize("field", ["timeout_seconds", "max_calls", "max_result_bytes", "max_code_bytes"])
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CodeModeLimits(**{field: 0})
