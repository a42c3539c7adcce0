"""`--tasks MODE` on `plan create` and `plan update`, and `tasks` in a file given to `apimcp apply`: the mode
reaches the plan in its canonical text, off clears it, and a bad mode is refused naming the option or key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from tests.deployment.harness import ECHO_SPEC, Deployment, deployment


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory.mktemp("cp") / "data") as running:
        yield running


@pytest.fixture
def live(deployed: Deployment) -> Deployment:
    """The deployment, logged in to (each test has a CLI configuration of its own)."""
    token = deployed.api.http.headers["Authorization"].removeprefix("Bearer ")
    assert CliRunner().invoke(app, ["login", deployed.base, "--token", token]).exit_code == 0
    return deployed


def run(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (args, result.output)
    return result


def _tasks(plan: str) -> object:
    return json.loads(run("plan", "show", plan, "-o", "json").output)["tasks"]


def test_the_tasks_option_sets_and_clears_the_plan_s_mode(live: Deployment) -> None:
    run("import", str(ECHO_SPEC), "--name", "tasks-echo", "--version", "1")
    created = run("plan", "create", "tasks-echo:1", "--name", "jobs", "--backend", live.backend, "--tasks",
                  "slow:2000ms", "-o", "json")  # fmt: skip
    assert json.loads(created.output)["tasks"] == "slow:2s"
    assert _tasks("jobs") == "slow:2s"
    run("plan", "update", "jobs", "--tasks", "all")
    assert _tasks("jobs") == "all"
    run("plan", "update", "jobs", "--description", "the mode stays")
    assert _tasks("jobs") == "all"
    run("plan", "update", "jobs", "--tasks", "slow")
    assert _tasks("jobs") == "slow:1s"
    run("plan", "update", "jobs", "--tasks", "off")
    assert _tasks("jobs") is None
    copied = json.loads(run("plan", "duplicate", "jobs", "--name", "jobs-2", "-o", "json").output)
    assert copied["tasks"] is None


@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("sometimes", '--tasks: task mode \'sometimes\' must be "off", "all" or "slow"'),
        ("all:2s", '--tasks: task mode "all" takes no duration'),
        ("slow:0s", "--tasks: task mode 'slow:0s': the duration must be from 1 ms"),
        ("", "--tasks: task mode '' must be"),
    ],
)
def test_a_bad_tasks_option_is_a_usage_error(live: Deployment, mode: str, says: str) -> None:
    run("import", str(ECHO_SPEC), "--name", "bad-tasks", "--version", "1")
    refused = run("plan", "create", "bad-tasks:1", "--name", "p", "--backend", live.backend, "--tasks", mode, code=2)
    assert says in refused.output.replace("\n", " ")
    assert all(p["name"] != "p" for p in live.api.call("GET", "/plans"))


def test_the_tasks_option_is_described(live: Deployment) -> None:
    for command in ("create", "update"):
        shown = run("plan", command, "--help").output
        assert "--tasks" in shown and "MODE" in shown


def _config(tmp_path: Path, backend: str, *modes: str) -> Path:
    expositions = "".join(
        f"  applied-jobs-{i}:\n    services: [echo]\n    tasks: {mode}\n" for i, mode in enumerate(modes)
    )
    path = tmp_path / "gateway.yaml"
    path.write_text(f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    name: applied-tasks
    version: "1"
    backend: {backend}
expositions:
{expositions}""")
    return path


def test_apply_gives_the_plan_the_file_s_mode(live: Deployment, tmp_path: Path) -> None:
    run("apply", str(_config(tmp_path, live.backend, "slow:500ms")))
    [plan] = [p for p in live.api.call("GET", "/plans") if p["name"] == "echo"]
    assert plan["tasks"] == "slow:500ms"
    run("apply", str(_config(tmp_path, live.backend, "off")))
    assert live.api.call("GET", f"/plans/{plan['id']}")["tasks"] is None
    differ = run("apply", str(_config(tmp_path, live.backend, "all", "off")), code=2).output
    assert (
        "set different cache hints, output_schemas, audit, rate limits, tasks, tool search, policies, guardrails, "
        "resilience or auth" in differ
    )
    bad = run("apply", str(_config(tmp_path, live.backend, "sometimes")), code=2).output
    assert "expositions.applied-jobs-0.tasks" in bad and "sometimes" in bad
