"""A plan's `read_only_tools`, set through the REST API and the CLI, decides which tools the gateway holds
read-only, whatever the description says; patterns that select none of the plan's tools are refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from apimcp.cli.main import app
from tests.deployment.harness import Deployment, deployment, wait_until
from tests.support.mcp_http import McpHttp


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        yield running


def _read_only(url: str) -> dict[str, bool]:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list")
    if reply.status != 200:
        return {}
    items = [tool for tool in reply.result["tools"] if tool["name"].endswith("item")]
    return {tool["name"]: tool.get("annotations", {}).get("readOnlyHint") is True for tool in items}


def test_the_plan_names_its_read_only_tools_through_rest_and_cli(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo")
    url = f"{live.base}/mcp/default/echo"
    claimed = {"get_item": True, "replace_item": False, "delete_item": False}
    wait_until(lambda: _read_only(url) == claimed)

    held = live.api.call("PATCH", f"/plans/{plan['id']}", 200, json={"read_only_tools": ["delete_item"]})
    assert held["read_only_tools"] == ["delete_item"]
    wait_until(lambda: _read_only(url) == {"get_item": False, "replace_item": False, "delete_item": True})

    refused = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"read_only_tools": ["delete_itme"]})
    assert "read_only_tools" in json.dumps(refused) and "delete_itme" in json.dumps(refused)
    excluded = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"exclude": ["delete_item"]})
    assert "read_only_tools" in json.dumps(excluded)  # the pattern would select nothing any more

    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    done = runner.invoke(app, ["plan", "update", "echo", "--read-only-tool", ""])
    assert done.exit_code == 0, done.output
    wait_until(lambda: _read_only(url) == {"get_item": False, "replace_item": False, "delete_item": False})
    done = runner.invoke(app, ["plan", "update", "echo", "--read-only-claimed"])
    assert done.exit_code == 0, done.output
    assert json.loads(runner.invoke(app, ["plan", "show", "echo", "-o", "json"]).output)["read_only_tools"] is None
    wait_until(lambda: _read_only(url) == claimed)
