"""What the CLI prints: Rich tables and key/value panels for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

Column = tuple[str, Callable[[dict[str, Any]], Any] | str]
_CONTROLS = str.maketrans({code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F) if code != 0x0A})
"""Control characters a cell shows as escapes: a value from outside (a caller's arguments in an approval's
question) must not drive the terminal."""


class Format(StrEnum):
    table = "table"
    json = "json"


OutputOption = Annotated[Format, typer.Option("--output", "-o", help="table (default) or json for scripts.")]


def console() -> Console:
    return Console(soft_wrap=True)


def json_text(value: Any, indent: int | None = 2) -> str:
    """JSON as the CLI prints it (indented, unless `indent` is None), in UTF-8: `años`, not `a\\u00f1os`."""
    return json.dumps(value, indent=indent, ensure_ascii=False)


def first_line(text: str | None, limit: int = 100) -> str:
    """The first line of `text` for a table cell, cut at `limit` characters with an ellipsis that says so."""
    line = (text or "").split("\n")[0]
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, str) and len(value) > 19 and value[4:5] == "-" and value[10:11] == "T":
        return value[:19].replace("T", " ")  # timestamps to the second
    return str(value)


def _value(row: dict[str, Any], source: Callable[[dict[str, Any]], Any] | str) -> Any:
    return row.get(source) if isinstance(source, str) else source(row)


def rows(data: Sequence[dict[str, Any]], columns: Sequence[Column], output: Format, empty: str) -> None:
    if output is Format.json:
        typer.echo(json_text(list(data)))
        return
    if not data:
        typer.echo(empty)
        return
    table = Table(show_edge=False, header_style="bold")
    for header, _ in columns:
        table.add_column(header, overflow="fold")
    for row in data:
        # as text, never markup: a value holding "[/bold]" is shown as it is, not obeyed (nor an error)
        table.add_row(*(Text(_cell(_value(row, source)).translate(_CONTROLS)) for _, source in columns))
    console().print(table)


def record(data: dict[str, Any], output: Format, title: str | None = None, hide: Sequence[str] = ()) -> None:
    """One object: JSON as is, or one line per field."""
    if output is Format.json:
        typer.echo(json_text(data))
        return
    out = console()
    if title:
        out.print(f"[bold]{escape(title)}[/bold]")
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        if key in hide or (isinstance(value, list) and value and isinstance(value[0], dict)):
            continue
        out.print(f"  {key.ljust(width)}  {_cell(value).translate(_CONTROLS)}", highlight=False, markup=False)


def note(message: str) -> None:
    """A remark for people (stderr, so JSON on stdout stays clean)."""
    typer.echo(message, err=True)
