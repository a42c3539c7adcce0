"""The CLI's saved context, and how a local server moves the login it made."""

from __future__ import annotations

from pathlib import Path

from apimcp.cli import context


def test_a_start_on_another_port_moves_the_login_the_server_made(tmp_path: Path) -> None:
    """Finding: after `demo --port 18500`, `serve` on 8080 with the same data left the CLI on the old port."""
    token_file = tmp_path / "bootstrap-token"
    token_file.write_text("first-token\n")
    context.save(context.Context("http://localhost:18500", "first-token", "default"))
    assert context.follow("http://localhost:8080", token_file) == context.context_path()
    assert context.load() == context.Context("http://localhost:8080", "first-token", "default")
    assert context.follow("http://localhost:8080", token_file) is None  # already there


def test_a_login_the_user_made_stays_where_it_is(tmp_path: Path) -> None:
    token_file = tmp_path / "bootstrap-token"
    token_file.write_text("first-token\n")
    context.save(context.Context("https://cp.example.com", "another-token", "acme"))
    assert context.follow("http://localhost:8080", token_file) is None
    assert context.follow("http://localhost:8080", tmp_path / "no-such-file") is None
    assert context.load() == context.Context("https://cp.example.com", "another-token", "acme")
