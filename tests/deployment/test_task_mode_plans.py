"""A plan's task mode, tool search and code mode set through the REST API and the CLI reach the gateway: the
exposition advertises tasks while the mode is on, and stops when it is off; a bad mode is refused naming the field."""

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


def _advertised(url: str) -> bool:
    with McpHttp(url) as mcp:
        reply = mcp.modern("server/discover")
        return reply.status == 200 and "extensions" in reply.result["capabilities"]


def test_the_task_mode_is_set_by_rest_and_cli_and_served(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", tasks="slow:2000ms")
    assert plan["tasks"] == "slow:2s"  # stored in its canonical form
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: _advertised(url))

    refused = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"tasks": "sometimes"})
    assert "tasks" in json.dumps(refused) and "sometimes" in json.dumps(refused)

    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    assert runner.invoke(app, ["plan", "update", "echo", "--tasks", "all"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["plan", "show", "echo", "-o", "json"]).output)["tasks"] == "all"
    done = runner.invoke(app, ["plan", "update", "echo", "--tasks", "off"])
    assert done.exit_code == 0, done.output
    assert json.loads(runner.invoke(app, ["plan", "show", "echo", "-o", "json"]).output)["tasks"] is None
    wait_until(lambda: not _advertised(url))
    bad = runner.invoke(app, ["plan", "update", "echo", "--tasks", "slow:forever"])
    assert bad.exit_code == 2 and "--tasks" in bad.output


def _tool_names(url: str) -> list[str]:
    with McpHttp(url) as mcp:
        reply = mcp.modern("tools/list")
        return [t["name"] for t in reply.result["tools"]] if reply.status == 200 else []


def test_tool_search_is_set_by_rest_and_cli_and_served(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", tool_search=True)
    assert plan["tool_search"] is True
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: _tool_names(url) == ["search_tools", "describe_tools", "call_tool"])
    refused = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"tool_search": "sometimes"})
    assert "tool_search" in json.dumps(refused)
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    assert runner.invoke(app, ["plan", "update", "echo", "--no-tool-search"]).exit_code == 0
    wait_until(lambda: "get_item" in _tool_names(url))


def test_code_mode_is_set_by_rest_and_cli_and_served(live: Deployment) -> None:
    service = live.api.import_echo()
    plan, _ = live.api.expose(service["id"], live.backend, "echo", code_mode="read_only")
    assert plan["code_mode"] == "read_only"
    url = f"{live.base}/mcp/default/echo"
    wait_until(lambda: _tool_names(url) == ["search_tools", "describe_tools", "execute_code"])
    with McpHttp(url) as mcp:
        program = {"code": "return (await tools.get_item({itemId: '3'})).path;"}
        reply = mcp.modern("tools/call", {"name": "execute_code", "arguments": program})
    assert reply.result["content"][0]["text"] == '"/v1/items/3"'
    refused = live.api.call("PATCH", f"/plans/{plan['id']}", 422, json={"code_mode": "sometimes"})
    assert "code_mode is one of off, on, read_only (or true/false), not 'sometimes'" in json.dumps(refused)
    token = live.api.http.headers["Authorization"].removeprefix("Bearer ")
    runner = CliRunner()
    assert runner.invoke(app, ["login", live.base, "--token", token]).exit_code == 0
    assert runner.invoke(app, ["plan", "update", "echo", "--code-mode", "on"]).exit_code == 0
    assert json.loads(runner.invoke(app, ["plan", "show", "echo", "-o", "json"]).output)["code_mode"] == "on"
    bad = runner.invoke(app, ["plan", "update", "echo", "--code-mode", "maybe"])
    assert bad.exit_code == 2 and "--code-mode" in bad.output
    assert runner.invoke(app, ["plan", "update", "echo", "--code-mode", "off"]).exit_code == 0
    wait_until(lambda: "get_item" in _tool_names(url))
