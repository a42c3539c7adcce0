"""The layering rules of docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "apimcp"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_protocol_engine_imports_nothing_else_from_apimcp() -> None:
    modules = sorted((SRC / "protocol").glob("*.py"))
    assert len(modules) > 10
    for module in modules:
        foreign = {m for m in _imports(module) if m.startswith("apimcp") and not m.startswith("apimcp.protocol")}
        assert not foreign, f"{module.name} imports {foreign}"
