"""What the CLI prints of values that come from outside (an approval's question holds a caller's arguments): shown
as they are, never obeyed as Rich markup or terminal escapes, and never an error."""

from __future__ import annotations

import pytest

from apimcp.cli import output
from apimcp.cli.output import Format

COLUMNS: list[output.Column] = [("ID", "id"), ("QUESTION", "question")]


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ('Approve t with name="[/bold]"?', 'Approve t with name="[/bold]"?'),  # a closing tag nothing opened
        ('Approve t with name="[conceal]", itemId="crown"?', 'Approve t with name="[conceal]", itemId="crown"?'),
        ("Approve t with name=\x1b[8m?", "Approve t with name=\\x1b[8m?"),
    ],
)
def test_a_cell_is_shown_as_text(question: str, shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    output.rows([{"id": "apr_1", "question": question}], COLUMNS, Format.table, "none")
    printed = capsys.readouterr().out
    assert shown in printed
    assert "\x1b" not in printed


def test_a_record_is_shown_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    output.record({"question": "a\x1b[2Jb [bold]c[/bold]"}, Format.table, title="Request [/x]")
    printed = capsys.readouterr().out
    assert "Request [/x]" in printed and "a\\x1b[2Jb [bold]c[/bold]" in printed and "\x1b" not in printed
