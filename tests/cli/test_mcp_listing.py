"""`apimcp prompts`, `prompt`, `resources` and `read` against an exposition with artifacts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import Result
from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.gateway.artifact_gateway import artifact_gateway


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args), terminal_width=200)
    assert result.exit_code == code, (args, result.output)
    return result


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with artifact_gateway(tmp_path_factory.mktemp("cli")) as served:
        yield served


def test_prompts_are_listed_with_their_required_arguments(url: str) -> None:
    lines = run("prompts", url).output.splitlines()
    assert any("recommend_books" in line and "mood*" in line for line in lines)
    listed = json.loads(run("prompts", url, "-o", "json").output)
    assert {p["name"] for p in listed} == {"recommend_books", "review_digest"}


def test_a_prompt_is_rendered_and_a_missing_argument_is_named(url: str) -> None:
    assert "feels adventurous today" in run("prompt", url, "recommend_books", "--arg", "mood=adventurous").output
    refused = run("prompt", url, "recommend_books", code=1).output
    assert "mood" in refused and "-32602" in refused
    assert "NAME=VALUE" in run("prompt", url, "recommend_books", "--arg", "mood", code=2).output


def test_resources_and_templates_are_listed_and_read(url: str) -> None:
    listed = run("resources", url).output
    assert "note://bookshelf/house-rules" in listed and "file:///books/{bookId}" in listed
    assert run("read", url, "note://bookshelf/house-rules").output.startswith("# House rules")
    assert json.loads(run("read", url, "file:///books/4").output)["id"] == 4
    missing = run("read", url, "note://nowhere", code=1).output
    assert "note://nowhere" in missing


def test_a_tool_called_by_its_operation_id_gets_the_same_hint_however_it_is_called(url: str) -> None:
    """Finding: `call URL getInventory` (no --arg) printed the raw HTTP 400 body; with --arg it got a hint."""
    for args in (["getStats"], ["getBook", "--arg", "bookId=1"]):
        refused = run("call", url, *args, code=1).output
        assert f"has no tool {args[0]!r} (`apimcp tools {url}` lists them; did you mean " in refused, refused
        assert "HTTP 400" not in refused and "jsonrpc" not in refused
    assert "did you mean get_stats?" in run("call", url, "getStats", code=1).output
    assert f"has no tool 'nope' (`apimcp tools {url}` lists them)" in run("call", url, "nope", code=1).output


def test_json_output_is_utf8_not_escaped(url: str) -> None:
    """Finding: `-o json` wrote `a\\u00f1os` for `años`."""
    called = run("call", url, "get_book", "--arg", "bookId=4", "-o", "json").output
    assert "Cien años de soledad" in called and "\\u00f1" not in called
    assert json.loads(called)["structuredContent"]["author"] == "Gabriel García Márquez"
    assert "García Márquez" in run("call", url, "get_book", "--arg", "bookId=4").output


def test_the_tools_table_cuts_long_descriptions_with_an_ellipsis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding: the table cut descriptions at 100 characters without saying so."""
    long = "Search the catalogue " + "by title, author, year and tag " * 5
    tools = [{"name": "search", "description": long + "\nMore lines.", "inputSchema": {"type": "object"}}]
    monkeypatch.setattr("apimcp.cli.mcp_commands.request", lambda *_, **__: {"tools": tools})
    table = run("tools", "http://localhost:9/mcp/x").output
    cell = " ".join(line.split("│")[1].strip() for line in table.splitlines() if "│" in line)  # wrapped lines
    assert cell.endswith("…") and len(cell) == 100 and long.startswith(cell[:-1])
    assert "More lines" not in table
