"""`apimcp import` prints what the importer repaired in a description; `apimcp serve` logs it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from apimcp.cli.server_commands import run_plan
from apimcp.gateway.config import parse_config
from apimcp.gateway.plan import plan_gateway
from apimcp.settings import Settings
from tests.deployment.harness import Deployment

SLOPPY = """
openapi: 3.0.3
info: {title: Sloppy, version: "1"}
servers: [{url: "https://sloppy.example.com"}]
paths:
  /pets:
    get:
      parameters:
        - {name: limit, in: query, schema: {type: string, pattern: 0}}
      responses: {"200": {description: ok}}
"""
WARNING = (
    "GET /pets: /paths/~1pets/get/parameters/0/schema/pattern: `pattern: 0` is not valid JSON Schema (0 is not of "
    'type "string"); dropped'
)


def test_import_prints_the_description_warnings(live: Deployment, tmp_path: Path) -> None:
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    spec = tmp_path / "sloppy.yaml"
    spec.write_text(SLOPPY)
    result = runner.invoke(app, ["import", str(spec)])
    assert result.exit_code == 0, result.output
    assert "Imported service Sloppy 1 (1 operations)" in result.stdout
    assert result.stderr == f"1 warning about the description:\n  {WARNING}\n"


def test_serve_logs_the_description_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sloppy.yaml").write_text(SLOPPY)
    plan = plan_gateway(parse_config("services:\n  sloppy:\n    openapi: sloppy.yaml\n", "gateway.yaml", tmp_path))

    async def not_serving(*args: Any, **kwargs: Any) -> None:
        return None

    monkeypatch.setattr("apimcp.gateway.serve.serve_gateway", not_serving)
    with caplog.at_level(logging.WARNING, logger="apimcp.import"):
        run_plan(plan, "127.0.0.1", 0, None, Settings())
    assert [record.getMessage() for record in caplog.records if record.name == "apimcp.import"] == [
        f"service 'sloppy': {WARNING}"
    ]
