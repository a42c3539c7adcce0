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
