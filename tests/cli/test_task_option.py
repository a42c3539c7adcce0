"""`--tasks MODE` on `plan create` and `plan update`, and `tasks` in a file given to `apimcp apply`: the mode
reaches the plan in its canonical text, off clears it, and a bad mode is refused naming the option or key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.invoking import run
from tests.deployment.harness import ECHO_SPEC, Deployment


def _tasks(plan: str) -> object:
    return json.loads(run("plan", "show", plan, "-o", "json").output)["tasks"]


def test_the_tasks_option_sets_and_clears_the_plan_s_mode(logged_in: Deployment) -> None:
    run("import", str(ECHO_SPEC), "--name", "tasks-echo", "--version", "1")
    created = run("plan", "create", "tasks-echo:1", "--name", "jobs", "--backend", logged_in.backend, "--tasks",
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
def test_a_bad_tasks_option_is_a_usage_error(logged_in: Deployment, mode: str, says: str) -> None:
    run("import", str(ECHO_SPEC), "--name", "bad-tasks", "--version", "1")
    refused = run(
        "plan", "create", "bad-tasks:1", "--name", "p", "--backend", logged_in.backend, "--tasks", mode, code=2
    )
    assert says in refused.output.replace("\n", " ")
    assert all(p["name"] != "p" for p in logged_in.api.call("GET", "/plans"))


def test_the_tasks_option_is_described(logged_in: Deployment) -> None:
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


def test_apply_gives_the_plan_the_file_s_mode(logged_in: Deployment, tmp_path: Path) -> None:
    run("apply", str(_config(tmp_path, logged_in.backend, "slow:500ms")))
    [plan] = [p for p in logged_in.api.call("GET", "/plans") if p["name"] == "echo"]
    assert plan["tasks"] == "slow:500ms"
    run("apply", str(_config(tmp_path, logged_in.backend, "off")))
    assert logged_in.api.call("GET", f"/plans/{plan['id']}")["tasks"] is None
    differ = run("apply", str(_config(tmp_path, logged_in.backend, "all", "off")), code=2).output
    assert (
        "set different cache hints, output_schemas, audit, rate limits, tasks, tool search, policies, guardrails, "
        "resilience or auth" in differ
    )
    bad = run("apply", str(_config(tmp_path, logged_in.backend, "sometimes")), code=2).output
    assert "expositions.applied-jobs-0.tasks" in bad and "sometimes" in bad
