"""A plan's `code_mode`: off (the default), on, or read_only (programs call only tools that change nothing)."""

from __future__ import annotations

from typing import Final, Literal, get_args

CodeModeSetting = Literal["off", "on", "read_only"]
VALUES: Final[tuple[str, ...]] = get_args(CodeModeSetting)


class CodeModeSettingError(ValueError):
    """A `code_mode` value that is none of `VALUES`; the message says what is allowed."""


def parse_code_mode(value: object) -> CodeModeSetting:
    """`value` as a setting: one of `VALUES`, or a boolean (true: on, false: off) as YAML and JSON write it."""
    if value is None or value is False:
        return "off"
    if value is True:
        return "on"
    if isinstance(value, str):
        for known in ("off", "on", "read_only"):
            if value == known:
                return known
    raise CodeModeSettingError(f"code_mode is one of {', '.join(VALUES)} (or true/false), not {value!r}")
