"""Help texts a person reads: values named as the command line knows them, not as Python types.

Typer shows each option's Python type (`<list[str]>`, `<int>`, and `<bool>` beside every flag, `--help`
included). The root command's group names them once for every command instead: TEXT, INTEGER, FLOAT,
PATH, the choices themselves (`table|json`), and nothing for a flag. An explicit `metavar=` is kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "Path": "PATH", "path": "PATH"}
_TYPE = re.compile(r"^<(?:list\[)?(?P<inner>[^\]>]+)\]?>$")


def value_name(shown: str) -> str:
    """What a value is called in help, from Typer's display of its type (`<list[str]>` -> TEXT)."""
    found = _TYPE.match(shown)
    if found is None:
        return shown
    inner = found.group("inner")
    return _NAMES.get(inner, inner)


def _commands(command: Any) -> Iterator[Any]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def _name_values(command: Any) -> None:
    ctx = typer.Context(command)
    helper = command.get_help_option(ctx)  # made on first use: made now, to be named too
    for param in [*command.params, *([helper] if helper is not None else [])]:
        if param.metavar is not None or not isinstance(param, TyperOption):
            continue
        param.metavar = "" if param.is_flag else value_name(param.display_type(ctx))


class ReadableGroup(TyperGroup):
    """The root group: every command's options below it get readable value names (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for command in _commands(self):
            _name_values(command)
