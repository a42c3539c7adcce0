"""The documents that help texts, the README and the docs point to exist, and say what the code does."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from apimcp.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
POINTER = re.compile(r"docs/[A-Za-z0-9_./-]+\.md")


def _pointers() -> dict[str, set[str]]:
    """Each docs/*.md path named in the README, the sources or the docs, with where it is named."""
    found: dict[str, set[str]] = {}
    for path in [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("src/**/*.py")]:
        for pointer in POINTER.findall(path.read_text()):
            found.setdefault(pointer, set()).add(str(path.relative_to(ROOT)))
    return found


def test_apimcp_serve_help_pointed_to_a_missing_docs_configuration_md() -> None:
    help_text = CliRunner().invoke(app, ["serve", "--help"], terminal_width=200).output
    assert "docs/configuration.md" in help_text
    assert (ROOT / "docs" / "configuration.md").is_file()


def test_every_document_pointed_to_exists() -> None:
    pointers = _pointers()
    assert "docs/security.md" in pointers
    missing = {pointer: sorted(where) for pointer, where in pointers.items() if not (ROOT / pointer).is_file()}
    assert missing == {}


def test_the_configuration_reference_names_every_key_of_the_server_section() -> None:
    from apimcp.gateway.config import ServerConfig

    reference = (ROOT / "docs" / "configuration.md").read_text()
    assert [key for key in ServerConfig.model_fields if f"  {key}:" not in reference] == []
