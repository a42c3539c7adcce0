"""An exposition's discovery report through the REST API and the CLI: made of the tools its gateways serve (its
plan's selection, with its prefix), kept until the plan changes, refused for an exposition of another organization
or none; and the control plane makes one at a time."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from typer.testing import CliRunner

from apimcp.cli.discovery_commands import REPORT_SECONDS
from apimcp.cli.main import app
from apimcp.control.reports import KEPT, Reports, ReportsBusy
from apimcp.findability.report import VECTOR_WAIT_SECONDS
from tests.deployment.harness import Deployment, deployment


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    with deployment(tmp_path_factory.mktemp("data")) as running:
        yield running


def test_a_report_covers_the_tools_the_plan_serves_and_is_kept_until_the_plan_changes(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, exposition = live.api.expose(service["id"], live.backend, "reported", tool_prefix="echo_",
                                       exclude=["delete_item"])  # fmt: skip
    path = f"/expositions/{exposition['id']}/discovery"
    report: dict[str, Any] = live.api.call("GET", path)
    assert report["tools"] == service["operation_count"] - 1
    assert report["ranking"] in {"lexical", "hybrid"}
    assert set(report["by_kind"]) == {"title", "description", "name", "paraphrase", "keywords"}
    assert all(entry["tool"].startswith("echo_") for entry in report["hardest"])
    assert report["context"]["every_tool"]["listing"]["bytes"] > report["context"]["search"]["listing"]["bytes"]
    assert live.api.call("GET", path) == report  # kept: the same report, not made again
    live.api.call("PATCH", f"/plans/{plan['id']}", json={"exclude": []})
    again = live.api.call("GET", path)
    assert again["tools"] == report["tools"] + 1
    live.api.call("GET", "/expositions/nope/discovery", 404)


def test_the_cli_prints_the_report_or_its_json(live: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []
    opened = urllib.request.urlopen

    def waiting(request: Any, *, timeout: float, context: Any = None) -> Any:
        waited.append(timeout)
        return opened(request, timeout=timeout, context=context)

    monkeypatch.setattr(urllib.request, "urlopen", waiting)
    service = live.api.import_echo(name="echo-cli")
    live.api.expose(service["id"], live.backend, "cli-reported")
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    shown = runner.invoke(app, ["discovery", "report", "cli-reported"])
    assert shown.exit_code == 0, shown.output
    assert "Discovery report of cli-reported" in shown.output
    assert "recall@5" in shown.output and "What a model reads" in shown.output
    as_json = runner.invoke(app, ["discovery", "report", "cli-reported", "-o", "json"])
    assert json.loads(as_json.output)["tools"] == service["operation_count"]
    missing = runner.invoke(app, ["discovery", "report", "no-such-exposition"])
    assert missing.exit_code != 0
    # the report is waited for as long as the control plane may take to make it (the finding: 120 s, as any call)
    assert REPORT_SECONDS in waited and REPORT_SECONDS > VECTOR_WAIT_SECONDS


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@contextmanager
def being_made(
    reports: Reports, owner: str, key: str, report: dict[str, Any], took: Callable[[], None] = lambda: None
) -> Iterator[None]:
    """While the block runs, `owner`'s report `key` is being made (in a thread); it is done when the block ends,
    `took` called as it finishes (to move a clock on)."""
    started, release = threading.Event(), threading.Event()

    def slow() -> dict[str, Any]:
        started.set()
        release.wait(10)
        took()
        return report

    making = threading.Thread(target=lambda: reports.get(owner, key, slow))
    making.start()
    assert started.wait(10)
    try:
        yield
    finally:
        release.set()
        making.join(10)


def test_reports_are_made_one_at_a_time_and_kept() -> None:
    reports = Reports()
    with (
        being_made(reports, "org", "a", {"made": "first"}),
        pytest.raises(ReportsBusy, match="another discovery report is being made"),
    ):
        reports.get("org", "b", lambda: {"made": "second"})
    assert reports.get("org", "a", lambda: {"made": "again"}) == {"made": "first"}
    assert reports.get("org", "b", lambda: {"made": "second"}) == {"made": "second"}


def test_an_organization_that_kept_another_waiting_lets_it_go_first() -> None:
    """The finding: one organization asking for report after report held the one being made, and every other
    organization was told to come back, for as long as it went on."""
    clock = Clock()
    reports = Reports(clock=clock)
    with (
        being_made(reports, "greedy", "a", {"made": "first"}, took=lambda: clock.advance(60)),  # a minute
        pytest.raises(ReportsBusy, match="being made"),
    ):
        reports.get("patient", "p", lambda: {"made": "patient"})
    with pytest.raises(ReportsBusy, match="another organization's discovery report goes first"):
        reports.get("greedy", "b", lambda: {"made": "second"})
    assert reports.get("greedy", "a", dict) == {"made": "first"}  # what it has is still answered
    assert reports.get("patient", "p", lambda: {"made": "patient"}) == {"made": "patient"}
    assert reports.get("greedy", "b", lambda: {"made": "second"}) == {"made": "second"}  # its turn again


def test_a_third_organization_s_turn_does_not_end_what_one_owes_another() -> None:
    """The finding: any organization's report cleared the duty to yield, so a third one, which had not waited,
    gave the greedy one its turn back before the one it kept waiting had had its own."""
    clock = Clock()
    reports = Reports(clock=clock)
    with being_made(reports, "greedy", "a", {}, took=lambda: clock.advance(60)), pytest.raises(ReportsBusy):
        reports.get("patient", "p", dict)
    assert reports.get("third", "t", lambda: {"made": "third"}) == {"made": "third"}
    with pytest.raises(ReportsBusy, match="another organization's discovery report goes first"):
        reports.get("greedy", "b", dict)
    assert reports.get("patient", "p", lambda: {"made": "patient"}) == {"made": "patient"}
    assert reports.get("greedy", "b", lambda: {"made": "b"}) == {"made": "b"}


def test_a_turn_not_taken_is_given_back_after_as_long_as_the_report_took() -> None:
    clock = Clock()
    reports = Reports(clock=clock)
    with being_made(reports, "greedy", "a", {}, took=lambda: clock.advance(60)), pytest.raises(ReportsBusy):
        reports.get("patient", "p", dict)
    clock.advance(61)  # the patient one never came back
    assert reports.get("greedy", "b", lambda: {"made": "b"}) == {"made": "b"}


def test_one_organization_asking_for_many_reports_evicts_only_its_own() -> None:
    reports = Reports()
    reports.get("quiet", "q", lambda: {"made": "quiet"})
    for n in range(KEPT + 10):
        reports.get("busy", n, lambda n=n: {"made": n})  # type: ignore[misc]
    assert reports.get("quiet", "q", lambda: {"made": "again"}) == {"made": "quiet"}
    assert reports.get("busy", KEPT + 9, dict) == {"made": KEPT + 9}
    assert reports.get("busy", 0, lambda: {"made": "again"}) == {"made": "again"}  # its oldest was let go
