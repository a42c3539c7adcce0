"""The demo's data under later starts: another port, and `apimcp serve` on the same data directory."""

from __future__ import annotations

import json
from pathlib import Path

from apimcp.cli import context
from tests.support.processes import Background, cli, cli_ok, free_port


def _started(log: Path, *command: str) -> tuple[Background, str]:
    port = free_port()
    server = Background(log, *command, "--port", str(port))
    server.wait_for_http(f"http://127.0.0.1:{port}/healthz")
    return server, f"http://localhost:{port}"


def _backends() -> dict[str, str]:
    return {plan["name"]: plan["backend_endpoint"] for plan in json.loads(cli_ok("plan", "list", "-o", "json"))}


def test_serve_after_the_demo_on_another_port_follows_it(tmp_path: Path) -> None:
    """Finding: after `demo.sh --port 18500`, `serve` on 8080 with the same data left the CLI logged in to the old
    port and served the demo's exposition with its backend's port dead."""
    demo, first = _started(tmp_path / "demo.log", "demo")
    demo.stop()
    assert context.load() is not None and context.load().url == first  # type: ignore[union-attr]

    serve, base = _started(tmp_path / "serve.log", "serve")
    try:
        assert context.load().url == base  # type: ignore[union-attr]
        called = cli("call", f"{base}/mcp/default/bookshelf", "get_book", "--arg", "bookId=1")
        assert called.returncode == 0 and "Pride and Prejudice" in called.stdout, (called.stdout, called.stderr)
        cli_ok("plan", "duplicate", "demo", "--name", "copy")
    finally:
        serve.stop()
    assert f"now uses {base}" in serve.output() and "The demo's Bookshelf API runs at" in serve.output()

    demo, again = _started(tmp_path / "demo-again.log", "demo")
    try:
        backends = _backends()
        assert backends["copy"] == backends["demo"]  # the duplicate follows the demo's new port too
        called = cli("call", f"{again}/mcp/default/bookshelf", "get_book", "--arg", "bookId=1")
        assert called.returncode == 0 and "Pride and Prejudice" in called.stdout, (called.stdout, called.stderr)
    finally:
        demo.stop()
