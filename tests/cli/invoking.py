"""Running the CLI in tests, against a live control plane: a command that must end with a given exit code, and
logging in with the deployment's first admin token."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.deployment.harness import Deployment

WIDE = {"COLUMNS": "250"}
"""A table row on one line."""


def run(*args: str, code: int = 0, env: dict[str, str] | None = WIDE) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


def log_in(live: Deployment) -> Deployment:
    """The CLI's context logged in to `live` with its bootstrap (admin) token."""
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    run("login", live.base, "--token", token)
    return live
