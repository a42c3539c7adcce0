"""`apimcp apply`: a configuration file loaded into the control plane, and applied again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from apimcp.cli.main import app
from apimcp.gateway.config import ConfigError, load_config
from tests.control.factories import prompts
from tests.deployment.harness import ECHO_SPEC, Deployment, deployment, wait_until
from tests.gateway.echo_backend import digest
from tests.support.mcp_http import McpHttp

TOKEN = "applied-bearer-value-77"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Deployment]:
    with deployment(tmp_path / "data") as running:
        token = running.api.http.headers["Authorization"].removeprefix("Bearer ")
        assert CliRunner().invoke(app, ["login", running.base, "--token", token]).exit_code == 0
        yield running


def run(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(app, list(args), env=env)
    assert result.exit_code == code, (args, result.output)
    return result


def config(tmp_path: Path, backend: str, expositions: str) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    name: applied
    version: "3"
    backend: {backend}
    timeout: 2
    include: [get_item, secured]
    credentials: {{type: bearer, token: {{env: APPLY_TOKEN}}}}
expositions:
{expositions}
""")
    return path


def test_a_file_becomes_services_plans_secrets_and_expositions(live: Deployment, tmp_path: Path) -> None:
    path = config(tmp_path, live.backend, "  echo-api:\n    services: [echo]\n    cache: {tools/list: {ttl_ms: 5000}}")
    first = run("apply", str(path), env={"APPLY_TOKEN": TOKEN}).output
    for line in ("service", "applied 3", "secret", "echo-credentials", "plan", "exposition", "echo-api"):
        assert line in first
    assert "created" in first and TOKEN not in first
    [plan] = [p for p in live.api.call("GET", "/plans") if p["name"] == "echo"]
    assert (plan["backend_timeout_ms"], plan["include"], plan["cache"]) == (
        2000,
        ["get_item", "secured"],
        {"tools/list": {"ttl_ms": 5000, "scope": "private"}},
    )
    url = f"{live.base}/mcp/default/echo-api"
    wait_until(lambda: live.served("/mcp/default/echo-api"))
    with McpHttp(url) as mcp:
        sent = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result["structuredContent"]
        assert sent["headers"]["Authorization"] == "Bearer ***"  # the backend's echo of it is masked
        assert sent["header_digests"]["Authorization"] == digest(f"Bearer {TOKEN}")

    again = run("apply", str(path), env={"APPLY_TOKEN": TOKEN + "-2"}).output
    assert "updated" in again and "rotated" in again and "created" not in again
    assert len([e for e in live.api.call("GET", "/expositions") if e["name"] == "echo-api"]) == 1

    def sent_token() -> str:
        with McpHttp(url) as mcp:
            result = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result
            return str(result["structuredContent"]["header_digests"]["Authorization"])

    wait_until(lambda: sent_token() == digest(f"Bearer {TOKEN}-2"))


def test_what_cannot_be_applied_is_refused_before_anything_changes(live: Deployment, tmp_path: Path) -> None:
    path = config(tmp_path, live.backend, "  both:\n    services: [echo, echo]")
    refused = run("apply", str(path), env={"APPLY_TOKEN": TOKEN}, code=2).output
    assert "expositions.both.services: several services" in refused and "gateway.yaml:" in refused
    missing = run("apply", str(config(tmp_path, live.backend, "  one:\n    services: [echo]")), code=2).output
    assert "APPLY_TOKEN is not set" in missing
    assert live.api.call("GET", "/services") == []
    assert "gateway.yaml:" in run("apply", str(config(tmp_path, "ftp://x", "")), code=2).output
    stdio = tmp_path / "stdio.yaml"
    stdio.write_text("services:\n  local:\n    stdio: {command: ./server.py}\n")
    refused = run("apply", str(stdio), code=2).output
    assert "services.local.stdio: a stdio server is started only by a gateway serving this file" in refused
    assert live.api.call("GET", "/services") == []


def test_a_list_of_credentials_becomes_one_secret_each_and_every_call_carries_them(
    live: Deployment, tmp_path: Path
) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    name: two-keys
    backend: {live.backend}
    include: [secured]
    credentials:
      - {{type: api_key, name: X-Api-Key, value: {{env: KEY}}}}
      - {{type: api_key, name: X-Client-Id, value: {{env: CLIENT}}}}
""")
    env = {"KEY": "applied-key-value", "CLIENT": "applied-client-id"}
    output = run("apply", str(path), env=env).output
    assert "echo-credentials-1" in output and "echo-credentials-2" in output
    [plan] = [p for p in live.api.call("GET", "/plans") if p["name"] == "echo"]
    names = {s["id"]: s["name"] for s in live.api.call("GET", "/secrets")}
    assert [names[i] for i in plan["secret_ids"]] == ["echo-credentials-1", "echo-credentials-2"]
    wait_until(lambda: live.served("/mcp/default/echo"))
    with McpHttp(f"{live.base}/mcp/default/echo") as mcp:
        sent = mcp.modern("tools/call", {"name": "secured", "arguments": {}}).result["structuredContent"]
    assert (sent["headers"]["X-Api-Key"], sent["headers"]["X-Client-Id"]) == ("***", "***")
    assert sent["header_digests"]["X-Client-Id"] == digest("applied-client-id")


def test_a_services_artifact_files_are_attached_and_selected_by_its_plan(live: Deployment, tmp_path: Path) -> None:
    (tmp_path / "greetings.yaml").write_bytes(prompts("artifacts", "1", "greet", result="Say hello."))
    (tmp_path / "other.yaml").write_bytes(prompts("artifacts", "1", "other"))
    live.api.import_echo("artifacts", "1")
    [service] = live.api.call("GET", "/services")
    files = {"file": ("other.yaml", (tmp_path / "other.yaml").read_bytes(), "application/yaml")}
    live.api.call("POST", f"/services/{service['id']}/artifacts", 201, files=files)  # attached by someone else
    path = tmp_path / "gateway.yaml"
    path.write_text(f"""
services:
  echo:
    openapi: {ECHO_SPEC}
    name: artifacts
    version: "1"
    backend: {live.backend}
    artifacts: [greetings.yaml]
""")
    output = run("apply", str(path)).output
    assert "artifact" in output and "greetings.yaml" in output and "attached" in output
    [plan] = [p for p in live.api.call("GET", "/plans") if p["name"] == "echo"]
    assert plan["artifacts"] == ["greetings.yaml"]
    wait_until(lambda: live.served("/mcp/default/echo"))

    def prompt_names() -> list[str]:
        with McpHttp(f"{live.base}/mcp/default/echo") as mcp:
            reply = mcp.modern("prompts/list")
            return [p["name"] for p in reply.result["prompts"]] if "result" in reply.body else []

    wait_until(lambda: prompt_names() == ["greet"])  # the plan's selection, not every attached file

    (tmp_path / "greetings.yaml").write_bytes(prompts("someone-else", "1", "greet"))
    refused = run("apply", str(path), code=1).output  # the control plane knows which service it is
    assert "artifact greetings.yaml: /service: the file is for someone-else 1, not artifacts 1" in refused
    (tmp_path / "greetings.yaml").write_text("kind: Prompts\n")
    refused = run("apply", str(path), code=2).output  # checked before anything is written
    assert "services.echo.artifacts[0]: " in refused and "apiVersion" in refused


def test_templates_are_made_then_replaced_and_a_refused_one_names_itself(live: Deployment, tmp_path: Path) -> None:
    path = config(tmp_path, live.backend, "  echo-api:\n    services: [echo]")
    base = path.read_text()
    path.write_text(base + "templates:\n  careful:\n    description: Audited\n    settings: {audit: true}\n")
    assert "careful" in run("apply", str(path), env={"APPLY_TOKEN": TOKEN}).output
    [made] = live.api.call("GET", "/templates")
    assert (made["name"], made["description"], made["settings"]) == ("careful", "Audited", {"audit": True})
    path.write_text(base + "templates:\n  careful:\n    settings: {tasks: all}\n")
    run("apply", str(path), env={"APPLY_TOKEN": TOKEN})
    [replaced] = live.api.call("GET", "/templates")
    assert (replaced["id"], replaced["description"], replaced["settings"]) == (made["id"], None, {"tasks": "all"})

    path.write_text(base + "templates:\n  wrong:\n    settings: {backend_endpoint: 'http://x'}\n")
    refused = run("apply", str(path), code=1, env={"APPLY_TOKEN": TOKEN}).output
    assert "template wrong: settings.backend_endpoint: Extra inputs are not permitted" in refused
    assert [t["name"] for t in live.api.call("GET", "/templates")] == ["careful"]


def test_a_refusal_midway_lists_what_was_applied_before_it(live: Deployment, tmp_path: Path) -> None:
    """The finding: only the refusal was printed, while the objects applied before it stayed, unsaid."""
    path = tmp_path / "two.yaml"
    path.write_text(f"""
services:
  first: {{openapi: {ECHO_SPEC}, name: first, version: "1", backend: {live.backend}}}
  second: {{openapi: {ECHO_SPEC}, name: second, version: "1", backend: {live.backend}, include: [no_such_tool]}}
""")
    refused = run("apply", str(path), code=1)
    assert refused.stderr.splitlines() == [
        "applied before the refusal below, and kept: service first 1 (created), plan first (created), "
        "service second 1 (created)",
        "error: these patterns select no operation of second: no_such_tool (include)",
    ]
    assert [s["name"] for s in live.api.call("GET", "/services")] == ["first", "second"]


def test_a_guardrail_this_machine_has_not_installed_is_the_control_planes_to_check(
    live: Deployment, tmp_path: Path
) -> None:
    """The finding: apply built the guardrails as if this process were the gateway, so a company's own guardrail,
    installed on its gateways but not where apply runs, was refused; serving the file still refuses it."""
    path = tmp_path / "guarded.yaml"
    path.write_text(f"""
services:
  echo: {{openapi: {ECHO_SPEC}, name: guarded, version: "1", backend: {live.backend}}}
expositions:
  guarded: {{services: [echo], guardrails: [{{use: acme-pii, action: block}}]}}
""")
    run("apply", str(path))
    (plan,) = live.api.call("GET", "/plans")
    assert [(g["use"], g["action"]) for g in plan["guardrails"]] == [("acme-pii", "block")]
    with pytest.raises(ConfigError, match="acme-pii"):
        load_config(path)
