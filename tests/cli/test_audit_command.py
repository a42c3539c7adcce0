"""`apimcp audit`: a summary of refusals shows how many it stands for (COUNT), one from more clients than the
gateway told apart says so (CLIENT), and `--refused` / `--answered` list one kind only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.deployment.harness import Deployment, deployment

TIMES = "\u00d7"  # the multiplication sign before a summary's count


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        token = running.api.http.headers["Authorization"].removeprefix("Bearer ")
        assert CliRunner().invoke(app, ["login", running.base, "--token", token]).exit_code == 0
        yield running


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})  # a table row on one line
    assert result.exit_code == 0, (args, result.output)
    return result.output


def test_a_summary_of_refusals_shows_its_count(live: Deployment) -> None:
    service = live.api.import_echo()
    _, exposition = live.api.expose(service["id"], live.backend, "library", audit=True)
    gateway = live.api.call("POST", "/tokens", 201, json={"name": "edge", "kind": "gateway"})["token"]
    where = {"exposition_id": exposition["id"], "exposition": "library"}
    refused = {**where, "action": "authentication", "outcome": "failure", "status": 401,
               "reason": "invalid_api_key", "target": "/mcp/default/library",
               "first_time": 1_800_000_000.0, "last_time": 1_800_000_059.0}  # fmt: skip
    events = [
        {**where, "time": 1_800_000_000.0, "action": "tools/call", "target": "get_item", "outcome": "success"},
        {**refused, "time": 1_800_000_059.0, "count": 137, "client": "203.0.113.9"},
        {**refused, "time": 1_800_000_060.0, "count": 4000, "overflow": True},
    ]
    reported = httpx2.post(f"{live.base}/api/v1/gateway/audit", json={"events": events},
                           headers={"Authorization": f"Bearer {gateway}"})  # fmt: skip
    assert reported.status_code == 202, reported.text

    table = run("audit", "--exposition", "library")
    assert "COUNT" in table
    (summary,) = [line for line in table.splitlines() if "203.0.113.9" in line]
    assert f"{TIMES}137" in summary and "invalid_api_key" in summary
    (overflow,) = [line for line in table.splitlines() if f"{TIMES}4000" in line]
    assert "(many)" in overflow
    (answered,) = [line for line in table.splitlines() if "get_item" in line]
    assert TIMES not in answered

    only_refused = json.loads(run("audit", "--refused", "-o", "json"))
    assert [e.get("count") for e in only_refused] == [4000, 137]
    only_answered = json.loads(run("audit", "--answered", "-o", "json"))
    assert [e["target"] for e in only_answered] == ["get_item"]
